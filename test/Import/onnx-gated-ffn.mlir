// The ONNX importer on the gated FFN `down(relu(gate(x)) * up(x))` with a
// 3-D input, as torch.onnx.export writes it (MatMul on K x N initializers):
// each linear collapses the tokens to [M, K], multiplies by the N x K weight
// (transposed at import time) through the (n, k) map and expands back.
// The weights are constants here (--weights constants).
// RUN: %python %S/Inputs/onnx_models.py gated-ffn --weights constants | FileCheck %s
// RUN: %python %S/Inputs/onnx_models.py gated-ffn --weights constants | sparse-opt | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/onnx_models.py gated-ffn --opset 14 --dtype bf16 --weights constants | FileCheck %s --check-prefix=BF16
// RUN: %python %S/Inputs/onnx_models.py gated-ffn --opset 14 --dtype bf16 --weights constants | sparse-opt | FileCheck %s --check-prefix=PARSED

// CHECK-LABEL: func.func @forward(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>)
// CHECK: [[WG:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<256x64xf32> loc("onnx::MatMul_{{[0-9]+}}")
// CHECK: [[XG:%[A-Za-z0-9_.]+]] = tensor.collapse_shape %x {{\[\[}}0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32> loc("/gate/MatMul")
// CHECK: [[G:%[A-Za-z0-9_.]+]] = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins([[XG]], [[WG]] : tensor<16x64xf32>, tensor<256x64xf32>) {{.*}} loc("/gate/MatMul")
// CHECK: [[G3:%[A-Za-z0-9_.]+]] = tensor.expand_shape [[G]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 256]
// CHECK: [[R:%[A-Za-z0-9_.]+]] = linalg.generic {{.*}} ins([[G3]] : tensor<2x8x256xf32>)
// CHECK: arith.maximumf
// CHECK: } -> tensor<2x8x256xf32> loc("/Relu")
// CHECK: [[WU:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<256x64xf32>
// CHECK: [[U:%[A-Za-z0-9_.]+]] = linalg.matmul {{.*}} ins({{%[A-Za-z0-9_.]+}}, [[WU]] : tensor<16x64xf32>, tensor<256x64xf32>) {{.*}} loc("/up/MatMul")
// CHECK: [[U3:%[A-Za-z0-9_.]+]] = tensor.expand_shape [[U]]
// CHECK: [[H:%[A-Za-z0-9_.]+]] = linalg.generic {{.*}} ins([[R]], [[U3]] : tensor<2x8x256xf32>, tensor<2x8x256xf32>)
// CHECK: arith.mulf
// CHECK: [[WD:%[A-Za-z0-9_.]+]] = arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<64x256xf32>
// CHECK: [[H2:%[A-Za-z0-9_.]+]] = tensor.collapse_shape [[H]] {{\[\[}}0, 1], [2]] : tensor<2x8x256xf32> into tensor<16x256xf32>
// CHECK: [[D:%[A-Za-z0-9_.]+]] = linalg.matmul {{.*}} ins([[H2]], [[WD]] : tensor<16x256xf32>, tensor<64x256xf32>) {{.*}} loc("/down/MatMul")
// CHECK: [[Y:%[A-Za-z0-9_.]+]] = tensor.expand_shape [[D]] {{.*}} into tensor<2x8x64xf32>
// CHECK: return [[Y]] : tensor<2x8x64xf32>
// CHECK-NOT: linalg.transpose

// PARSED-LABEL: func.func @forward(%arg0: tensor<2x8x64x{{b?}}f{{16|32}}>)
// PARSED-COUNT-3: linalg.matmul
// PARSED-NOT: linalg.transpose

// BF16-LABEL: func.func @forward(%x: tensor<2x8x64xbf16>) -> (tensor<2x8x64xbf16>)
// BF16: arith.constant dense_resource<onnx__MatMul_{{[0-9]+}}> : tensor<256x64xbf16>
// BF16: linalg.matmul {{.*}} : tensor<16x64xbf16>, tensor<256x64xbf16>)
// BF16-NOT: f32>
