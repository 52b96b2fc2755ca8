// The ONNX importer on the 2-layer Llama decoder of test/python/models.py as
// torch.onnx.export writes it: the initializers the graph reads are params
// after the ids, named by the initializers (the K x N MatMul initializers of
// torch's folded transposes keep their layout and are transposed at run
// time); Gather(embed.weight, ids) is sgpu.embedding; Pow -> ReduceMean ->
// Add(eps) -> Sqrt -> Div(1, .) -> Mul -> Mul(weight) becomes sgpu.rms_norm;
// Mul(x, cos) + Mul(Concat(Neg(Slice(x)), Slice(x)), sin) becomes sgpu.rope;
// MatMul(q, Transpose(k)) -> Div(4) -> Where(mask, -inf, .) -> Softmax ->
// MatMul(., v) becomes sgpu.attention {causal} (the exported mask constant is
// exactly the causal mask, so it is read and dropped); Mul(x, Sigmoid(x)) is
// one silu. With --weights constants the initializers are dense_resource
// constants (the MatMul ones transposed at import time).
// The all_reduce markers are identities to torch (nothing in the export):
// the ai.sparseopt AllReduce node is checked on a hand-made graph, and so is
// attention with a runtime boolean mask (negated: sgpu.attention keeps the
// positions where an i1 mask is true, Where(mask, -inf, .) drops them).
// RUN: %python %S/Inputs/onnx_models.py llama > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=RMS < %t.mlir
// RUN: FileCheck %s --check-prefix=ATTN < %t.mlir
// RUN: FileCheck %s --check-prefix=ROPE < %t.mlir
// RUN: sparse-opt %t.mlir | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/onnx_models.py llama --opset 14 | sparse-opt | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/onnx_models.py llama --weights constants > %t.const.mlir
// RUN: FileCheck %s --check-prefix=CONST < %t.const.mlir
// RUN: sparse-opt %t.const.mlir | FileCheck %s --check-prefix=CONST-PARSED
// RUN: %python %S/Inputs/onnx_models.py all-reduce --weights constants | FileCheck %s --check-prefix=AR
// RUN: %python %S/Inputs/onnx_models.py all-reduce --weights constants | sparse-opt | FileCheck %s --check-prefix=AR-PARSED
// RUN: %python %S/Inputs/onnx_models.py attention-where | FileCheck %s --check-prefix=MASK
// RUN: %python %S/Inputs/onnx_models.py attention-where | sparse-opt | FileCheck %s --check-prefix=MASK-PARSED

// CHECK-LABEL: func.func @forward(%ids: tensor<1x16xi64>, %embed_weight: tensor<128x64xf32> {sgpu.param = "embed.weight"}, %layers_0_attn_norm_weight: tensor<64xf32> {sgpu.param = "layers.0.attn_norm.weight"},
// CHECK-SAME: [[WQ:%onnx__MatMul_[0-9]+]]: tensor<64x64xf32> {sgpu.param = "onnx::MatMul_{{[0-9]+}}"},
// CHECK-SAME: %cos: tensor<1x1x16x16xf32> {sgpu.param = "cos"}, %sin: tensor<1x1x16x16xf32> {sgpu.param = "sin"},
// CHECK-SAME: -> (tensor<1x16x128xf32>)
// CHECK: [[X:%[A-Za-z0-9_.]+]] = sgpu.embedding %embed_weight, %ids : tensor<128x64xf32>, tensor<1x16xi64> -> tensor<1x16x64xf32> loc("/embed/Gather")
// CHECK: [[N:%[A-Za-z0-9_.]+]] = sgpu.rms_norm [[X]], %layers_0_attn_norm_weight {epsilon = 9.999999975e-07 : f32} : tensor<1x16x64xf32>, tensor<64xf32> -> tensor<1x16x64xf32> loc("/layers.0/attn_norm/Mul_1")
// CHECK: [[WQT:%[A-Za-z0-9_.]+]] = linalg.transpose ins([[WQ]] : tensor<64x64xf32>) {{.*}} permutation = [1, 0] loc("/layers.0/attn/q/MatMul")
// CHECK: linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} ins({{%[A-Za-z0-9_.]+}}, [[WQT]] : {{.*}} loc("/layers.0/attn/q/MatMul")
// CHECK: [[Q:%[A-Za-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[K:%[A-Za-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[V:%[A-Za-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[QR:%[A-Za-z0-9_.]+]] = sgpu.rope [[Q]], %cos, %sin : tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32> -> tensor<1x4x16x16xf32> loc("/layers.0/attn/Add")
// CHECK: [[KR:%[A-Za-z0-9_.]+]] = sgpu.rope [[K]], %cos, %sin : tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32> -> tensor<1x4x16x16xf32> loc("/layers.0/attn/Add_1")
// CHECK-NOT: linalg.softmax
// CHECK: [[A:%[A-Za-z0-9_.]+]] = sgpu.attention [[QR]], [[KR]], [[V]] {causal, scale = 2.500000000e-01 : f32} : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32> loc("/layers.0/attn/MatMul_1")
// CHECK: linalg.transpose ins([[A]] : tensor<1x4x16x16xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK: linalg.matmul {{.*}} loc("/layers.0/attn/o/MatMul")
// CHECK: sgpu.rms_norm {{.*}} loc("/layers.0/mlp_norm/Mul_1")
// CHECK: [[G:%[A-Za-z0-9_.]+]] = tensor.expand_shape {{.*}} output_shape [1, 16, 128] {{.*}} loc("/layers.0/mlp/gate/MatMul")
// CHECK: [[S:%silu[._][0-9]+]] = linalg.generic {{.*}} ins([[G]] : tensor<1x16x128xf32>)
// CHECK: } -> tensor<1x16x128xf32> loc("/layers.0/mlp/Mul")
// CHECK: linalg.generic {{.*}} ins([[S]], {{%[A-Za-z0-9_.]+}} : tensor<1x16x128xf32>, tensor<1x16x128xf32>)
// CHECK: sgpu.attention {{.*}} loc("/layers.1/attn/MatMul_1")
// CHECK: sgpu.rms_norm {{.*}} loc("/norm/Mul_1")
// CHECK: [[HWT:%[A-Za-z0-9_.]+]] = linalg.transpose ins(%onnx__MatMul_{{[0-9]+}} : tensor<64x128xf32>) {{.*}} loc("/head/MatMul")
// CHECK: linalg.matmul {{.*}} ins({{%[A-Za-z0-9_.]+}}, [[HWT]] : tensor<16x64xf32>, tensor<128x64xf32>) {{.*}} loc("/head/MatMul")
// CHECK: return {{%[A-Za-z0-9_.]+}} : tensor<1x16x128xf32>
// No weight data, mask, gather loop, concat, softmax, batched matmul, pow, sqrt or sigmoid is left.
// CHECK-NOT: dense_resource
// CHECK-NOT: linalg.batch_matmul

// RMS-COUNT-5: sgpu.rms_norm
// RMS-NOT: sgpu.rms_norm
// RMS-NOT: math.sqrt

// ATTN-COUNT-2: sgpu.attention {{.*}} {causal, scale = 2.500000000e-01 : f32}
// ATTN-NOT: sgpu.attention
// ATTN-NOT: linalg.softmax

// ROPE-COUNT-4: sgpu.rope {{%[A-Za-z0-9_.]+}}, %cos, %sin
// ROPE-NOT: sgpu.rope
// ROPE-NOT: tensor.concat

// PARSED-LABEL: func.func @forward(%arg0: tensor<1x16xi64>, %arg1: tensor<128x64xf32> {sgpu.param = "embed.weight"}
// PARSED-SAME: -> tensor<1x16x128xf32>
// PARSED: sgpu.embedding %arg1, %arg0
// PARSED-COUNT-15: linalg.matmul
// PARSED-NOT: linalg.matmul

// CONST-LABEL: func.func @forward(%ids: tensor<1x16xi64>) -> (tensor<1x16x128xf32>)
// CONST: [[TABLE:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<embed_weight> : tensor<128x64xf32>
// CONST: sgpu.embedding [[TABLE]], %ids : tensor<128x64xf32>, tensor<1x16xi64> -> tensor<1x16x64xf32> loc("/embed/Gather")
// CONST: [[NW:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<layers_0_attn_norm_weight> : tensor<64xf32>
// CONST: sgpu.rms_norm {{%[A-Za-z0-9_.]+}}, [[NW]]
// CONST: [[COS:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<cos> : tensor<1x1x16x16xf32>
// CONST: [[SIN:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<sin> : tensor<1x1x16x16xf32>
// CONST: sgpu.rope {{%[A-Za-z0-9_.]+}}, [[COS]], [[SIN]]
// CONST: sgpu.rms_norm {{.*}} loc("/norm/Mul_1")
// CONST: [[HW:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<128x64xf32>
// CONST: linalg.matmul {{.*}} ins({{%[A-Za-z0-9_.]+}}, [[HW]] : tensor<16x64xf32>, tensor<128x64xf32>) {{.*}} loc("/head/MatMul")
// CONST-NOT: sgpu.param
// CONST-NOT: dense_resource<onnx__Where

// CONST-PARSED-LABEL: func.func @forward(%arg0: tensor<1x16xi64>) -> tensor<1x16x128xf32>
// CONST-PARSED-COUNT-15: linalg.matmul
// CONST-PARSED-NOT: linalg.matmul
// CONST-PARSED-NOT: linalg.transpose {{.*}} permutation = [1, 0]

// AR-LABEL: func.func @forward(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>)
// AR: [[P:%[A-Za-z0-9_.]+]] = linalg.matmul {{.*}} loc("/o_proj/MatMul")
// AR: [[R:%[A-Za-z0-9_.]+]] = sgpu.all_reduce [[P]] : tensor<8x64xf32> loc("/o_proj/AllReduce")
// AR: return [[R]]

// AR-PARSED: sgpu.all_reduce %{{.*}} : tensor<8x64xf32>

// MASK-LABEL: func.func @forward(%q: tensor<1x4x16x32xf32>, %k: tensor<1x4x16x32xf32>, %v: tensor<1x4x16x32xf32>, %mask: tensor<1x1x16x16xi1>)
// MASK: [[KEEP:%not[._][0-9]+]] = linalg.generic {{.*}} ins(%mask : tensor<1x1x16x16xi1>)
// MASK: arith.constant true
// MASK: arith.xori
// MASK: sgpu.attention %q, %k, %v mask([[KEEP]] : tensor<1x1x16x16xi1>) {scale = 1.767766983e-01 : f32} {{.*}} loc("/attn/MatMul_1")
// MASK-NOT: linalg.softmax
// MASK-NOT: linalg.transpose

// MASK-PARSED: sgpu.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<1x1x16x16xi1>)
