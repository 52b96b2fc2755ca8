// ONNX importer errors: an unsupported op names its type, the node and the
// node's outputs (where it came from in ONNX); malformed files name the file;
// annotation errors name the weight (and the row and group that break the
// pattern, with the weights as constants); structured sparsity needs f16 or
// bf16, and as a param an N x K initializer; a symbolic input dimension
// needs a static shape.
// RUN: not %python %S/Inputs/onnx_models.py conv 2>&1 | FileCheck %s --check-prefix=CONV
// RUN: not %python %S/Inputs/onnx_models.py com-microsoft 2>&1 | FileCheck %s --check-prefix=DOMAIN
// RUN: not %python %S/Inputs/onnx_models.py mlp --file truncated 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// RUN: not %python %S/Inputs/onnx_models.py mlp --file raw 2>&1 | FileCheck %s --check-prefix=RAW
// RUN: not %python %S/Inputs/onnx_models.py symbolic 2>&1 | FileCheck %s --check-prefix=SYMBOLIC
// RUN: %python %S/Inputs/onnx_models.py symbolic --input-shape x=4x16 | sparse-opt | FileCheck %s --check-prefix=SHAPED
// RUN: not %python %S/Inputs/onnx_models.py mlp --sparsity fc3.weight=2:4 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not %python %S/Inputs/onnx_models.py mlp --sparsity fc1.weight=6:8 --dtype f16 --weights constants 2>&1 | FileCheck %s --check-prefix=DENSE
// RUN: not %python %S/Inputs/onnx_models.py mlp-3d --sparsity fc1.weight=6:8 --dtype f16 --weights constants 2>&1 | FileCheck %s --check-prefix=DENSE3
// RUN: not %python %S/Inputs/onnx_models.py mlp --sparsity fc1.weight=2:4 2>&1 | FileCheck %s --check-prefix=F32
// RUN: not %python %S/Inputs/onnx_models.py mlp-3d --sparsity fc1.weight=2:4 --dtype f16 2>&1 | FileCheck %s --check-prefix=KXN
// RUN: not %python %S/Inputs/onnx_models.py mlp --sparsity fc1.weight=3:4 2>&1 | FileCheck %s --check-prefix=PATTERN
// RUN: not %python %S/Inputs/onnx_models.py mlp --sparsity fc1.bias=2:4 2>&1 | FileCheck %s --check-prefix=BIAS

// CONV: error: ImportError_: unsupported ONNX op 'Conv' in node '/stem/conv/Conv' (outputs: 'c') of the ONNX model of graph 'g'

// DOMAIN: error: ImportError_: unsupported ONNX op 'FastGelu' of domain 'com.microsoft' in node '/act/FastGelu' (outputs: 'y') of the ONNX model of graph 'g'

// TRUNCATED: error: ImportError_: ONNX model file '{{.*}}mlp.onnx' cannot be read: {{.*}} (truncated, corrupt or not an ONNX file?)
// TRUNCATED-NOT: Traceback

// RAW: error: ImportError_: ONNX model file '{{.*}}mlp.onnx' cannot be read: {{.*}} (truncated, corrupt or not an ONNX file?)
// RAW-NOT: Traceback

// SYMBOLIC: error: ImportError_: input 'x' has a symbolic dimension 'batch' (dim 0); static shapes are required: pass input_shapes={'x': (...)}

// SHAPED: func.func @forward(%arg0: tensor<4x16xf32>, %arg1: tensor<16x8xf32> {sgpu.param = "w"}) -> tensor<4x8xf32>

// UNKNOWN: error: AnnotationError: sparsity annotation names 'fc3.weight', which is neither an initializer nor a linear weight of {{.*}} (linear weights: fc1.weight, fc2.weight)

// DENSE: error: AnnotationError: Gemm node '/fc1/Gemm' (outputs: '/fc1/Gemm_output_0'): weight 'fc1.weight' is not 6:8 sparse: row 0, group 0 (columns 0..7) has 8 nonzeros (annotated as 'fc1.weight'; checked on the 128 x 64 (N x K) layout)

// The annotation names the torch weight; the initializer is its K x N transpose.
// DENSE3: error: AnnotationError: {{.*}}: weight 'onnx::MatMul_{{[0-9]+}}' is not 6:8 sparse: row 0, group 0 (columns 0..7) has 8 nonzeros (annotated as 'fc1.weight'; checked on the 128 x 64 (N x K) layout, the transpose of the K x N initializer)

// F32: error: AnnotationError: Gemm node '/fc1/Gemm' (outputs: '/fc1/Gemm_output_0'): weight 'fc1.weight' is f32, but structured sparsity runs on f16/bf16 only: use dtype=f16 or bf16

// As a param the K x N initializer is bound as stored: it cannot carry the pattern.
// KXN: error: AnnotationError: {{.*}}: weight 'onnx::MatMul_{{[0-9]+}}' (annotated as 'fc1.weight') is a K x N MatMul initializer: as a param the program binds it as stored, and 2:4 sparsity needs the N x K layout; import with weights='constants' (the weight is transposed at import time) or export the layer as Gemm(transB=1)

// PATTERN: error: AnnotationError: sparsity annotation 'fc1.weight': unsupported structured sparsity 3:4

// BIAS: error: AnnotationError: sparsity annotation 'fc1.bias': this initializer is not the constant 2-D weight of a linear layer (MatMul or Gemm)
