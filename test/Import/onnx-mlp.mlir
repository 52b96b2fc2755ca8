// The ONNX importer on test/python/models.py's MLP as torch.onnx.export
// writes it: Gemm (transB) for 2-D inputs, MatMul on a K x N initializer +
// Add(bias) for 3-D ones; both become linalg.matmul on the N x K weight with
// the (n, k) map and the bias folded in. The 2:4-sparse linear + ReLU layer
// (annotated by its torch name) becomes one sgpu.spmm with a fused ReLU.
// The weights are constants here (--weights constants); as params (the
// default, PARAMS) the initializers are arguments named by sgpu.param, and
// a K x N initializer keeps its layout, transposed at run time.
// RUN: %python %S/Inputs/onnx_models.py mlp --weights constants | FileCheck %s
// RUN: %python %S/Inputs/onnx_models.py mlp --weights constants | sparse-opt | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/onnx_models.py mlp-3d --opset 14 --weights constants | FileCheck %s --check-prefix=MATMUL
// RUN: %python %S/Inputs/onnx_models.py mlp-3d --opset 14 --weights constants | sparse-opt | FileCheck %s --check-prefix=PARSED3
// RUN: %python %S/Inputs/onnx_models.py mlp | FileCheck %s --check-prefix=PARAMS
// RUN: %python %S/Inputs/onnx_models.py mlp-3d --opset 14 | FileCheck %s --check-prefix=PARAMS3
// RUN: %python %S/Inputs/onnx_models.py sparse-linear-relu --sparsity fc.weight=2:4 --dtype f16 --weights constants | FileCheck %s --check-prefix=SPARSE
// RUN: %python %S/Inputs/onnx_models.py sparse-linear-relu --sparsity fc.weight=2:4 --dtype f16 --weights constants \
// RUN:   | sparse-opt --sgpu-slide-sparse --sgpu-fuse-epilogue | FileCheck %s --check-prefix=SPMM

// CHECK-LABEL: func.func @forward(%x: tensor<8x64xf32>) -> (tensor<8x32xf32>)
// CHECK: [[W1:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<fc1_weight> : tensor<128x64xf32> loc("fc1.weight")
// CHECK: [[B1:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<fc1_bias> : tensor<128xf32> loc("fc1.bias")
// CHECK: [[ACC1:%[A-Za-z0-9_.]+]] = linalg.fill
// CHECK: [[MM1:%[A-Za-z0-9_.]+]] = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, [[W1]] : tensor<8x64xf32>, tensor<128x64xf32>) outs([[ACC1]] : tensor<8x128xf32>) -> tensor<8x128xf32> loc("/fc1/Gemm")
// CHECK: [[H1:%[A-Za-z0-9_.]+]] = linalg.generic {{.*}} ins([[MM1]], [[B1]] : tensor<8x128xf32>, tensor<128xf32>)
// CHECK: arith.addf
// CHECK: [[R1:%[A-Za-z0-9_.]+]] = linalg.generic {{.*}} ins([[H1]] : tensor<8x128xf32>)
// CHECK: arith.maximumf
// CHECK: } -> tensor<8x128xf32> loc("/Relu")
// CHECK: [[W2:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<fc2_weight> : tensor<32x128xf32>
// CHECK: [[MM2:%[A-Za-z0-9_.]+]] = linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} ins([[R1]], [[W2]] : tensor<8x128xf32>, tensor<32x128xf32>)
// CHECK: [[Y:%[A-Za-z0-9_.]+]] = linalg.generic {{.*}} ins([[MM2]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>)
// CHECK: return [[Y]] : tensor<8x32xf32>
// CHECK-NOT: linalg.transpose
// CHECK: dialect_resources
// CHECK: fc1_weight: "0x04000000

// PARSED-LABEL: func.func @forward(%arg0: tensor<8x64xf32>) -> tensor<8x32xf32>
// PARSED-COUNT-2: linalg.matmul
// PARSED-NOT: linalg.transpose

// PARAMS-LABEL: func.func @forward(%x: tensor<8x64xf32>, %fc1_weight: tensor<128x64xf32> {sgpu.param = "fc1.weight"}, %fc1_bias: tensor<128xf32> {sgpu.param = "fc1.bias"}, %fc2_weight: tensor<32x128xf32> {sgpu.param = "fc2.weight"}, %fc2_bias: tensor<32xf32> {sgpu.param = "fc2.bias"}) -> (tensor<8x32xf32>)
// PARAMS: linalg.matmul {{.*}} ins(%x, %fc1_weight : tensor<8x64xf32>, tensor<128x64xf32>) {{.*}} loc("/fc1/Gemm")
// PARAMS-NOT: linalg.transpose
// PARAMS-NOT: dense_resource

// PARAMS3-LABEL: func.func @forward(%x: tensor<2x8x64xf32>,
// PARAMS3-SAME: [[W1:%onnx__MatMul_[0-9]+]]: tensor<64x128xf32> {sgpu.param = "onnx::MatMul_{{[0-9]+}}"}, %fc1_bias: tensor<128xf32> {sgpu.param = "fc1.bias"},
// PARAMS3: [[W1T:%[A-Za-z0-9_.]+]] = linalg.transpose ins([[W1]] : tensor<64x128xf32>) {{.*}} permutation = [1, 0]
// PARAMS3: linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} ins({{%[A-Za-z0-9_.]+}}, [[W1T]] : tensor<16x64xf32>, tensor<128x64xf32>)
// PARAMS3-NOT: dense_resource

// The K x N initializer (renamed by torch's constant folding) is stored
// transposed, N x K, under its own name.
// MATMUL-LABEL: func.func @forward(%x: tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>)
// MATMUL: [[W1:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<128x64xf32> loc("onnx::MatMul_{{[0-9]+}}")
// MATMUL: [[B1:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<fc1_bias> : tensor<128xf32>
// MATMUL: [[X2:%[A-Za-z0-9_.]+]] = tensor.collapse_shape %x {{\[\[}}0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
// MATMUL: [[MM1:%[A-Za-z0-9_.]+]] = linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} ins([[X2]], [[W1]] : tensor<16x64xf32>, tensor<128x64xf32>)
// MATMUL: linalg.generic {{.*}} ins([[MM1]], [[B1]] : tensor<16x128xf32>, tensor<128xf32>)
// MATMUL: } -> tensor<16x128xf32> loc("/fc1/Add")
// MATMUL: tensor.expand_shape {{.*}} output_shape [2, 8, 128]
// MATMUL: arith.maximumf
// MATMUL: linalg.matmul {{.*}} tensor<16x128xf32>, tensor<32x128xf32>
// MATMUL: return {{%[A-Za-z0-9_.]+}} : tensor<2x8x32xf32>

// PARSED3-LABEL: func.func @forward(%arg0: tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
// PARSED3-COUNT-2: linalg.matmul
// PARSED3-NOT: linalg.transpose

// SPARSE-LABEL: func.func @forward(%x: tensor<128x256xf16>) -> (tensor<128x512xf16>)
// SPARSE: [[W:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<512x256xf16, #sgpu.nm<2:4>>
// SPARSE: linalg.matmul {{.*}} ins(%x, [[W]] : tensor<128x256xf16>, tensor<512x256xf16, #sgpu.nm<2:4>>) {{.*}} loc("/fc/MatMul")
// SPARSE: arith.maximumf

// SPMM-LABEL: func.func @forward(
// SPMM: [[P:%[A-Za-z0-9_.]+]] = sgpu.assemble
// SPMM: sgpu.spmm %arg0, [[P]] {activation = #sgpu.activation<relu>} : tensor<128x256xf16>, !sgpu.compressed<512x256xf16, #sgpu.nm<2:4>> -> tensor<128x512xf16>
// SPMM-NOT: linalg.matmul
// SPMM-NOT: linalg.generic
