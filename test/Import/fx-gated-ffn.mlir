// The torch.fx importer on the gated FFN `down(relu(gate(x)) * up(x))` with
// a 3-D input: each linear collapses the tokens to [M, K], multiplies by the
// N x K weight through the (n, k) map and expands back. The weights are
// constants here (--weights constants); as params (the default) they take
// the dtype option too.
// RUN: %python %S/Inputs/fx_models.py gated-ffn --weights constants | FileCheck %s
// RUN: %python %S/Inputs/fx_models.py gated-ffn --weights constants | sparse-opt | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/fx_models.py gated-ffn --dtype bf16 --weights constants | FileCheck %s --check-prefix=BF16
// RUN: %python %S/Inputs/fx_models.py gated-ffn --dtype bf16 | FileCheck %s --check-prefix=BF16-PARAMS

// CHECK-LABEL: func.func @forward(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>)
// CHECK: [[WG:%[a-z0-9_.]+]] = arith.constant dense_resource<gate_weight> : tensor<256x64xf32> loc("gate.weight")
// CHECK: [[XG:%[a-z0-9_.]+]] = tensor.collapse_shape %x {{\[\[}}0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
// CHECK: [[G:%[a-z0-9_.]+]] = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins([[XG]], [[WG]] : tensor<16x64xf32>, tensor<256x64xf32>) {{.*}} loc("gate"("models.py":{{[0-9]+}}:0))
// CHECK: [[G3:%[a-z0-9_.]+]] = tensor.expand_shape [[G]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 256]
// CHECK: [[R:%[a-z0-9_.]+]] = linalg.generic {{.*}} ins([[G3]] : tensor<2x8x256xf32>)
// CHECK: arith.maximumf
// CHECK: [[WU:%[a-z0-9_.]+]] = arith.constant dense_resource<up_weight> : tensor<256x64xf32>
// CHECK: [[U:%[a-z0-9_.]+]] = linalg.matmul {{.*}} ins({{%[a-z0-9_.]+}}, [[WU]] : tensor<16x64xf32>, tensor<256x64xf32>) {{.*}} loc("up"(
// CHECK: [[U3:%[a-z0-9_.]+]] = tensor.expand_shape [[U]]
// CHECK: [[H:%[a-z0-9_.]+]] = linalg.generic {{.*}} ins([[R]], [[U3]] : tensor<2x8x256xf32>, tensor<2x8x256xf32>)
// CHECK: arith.mulf
// CHECK: [[WD:%[a-z0-9_.]+]] = arith.constant dense_resource<down_weight> : tensor<64x256xf32>
// CHECK: [[H2:%[a-z0-9_.]+]] = tensor.collapse_shape [[H]] {{\[\[}}0, 1], [2]] : tensor<2x8x256xf32> into tensor<16x256xf32>
// CHECK: [[D:%[a-z0-9_.]+]] = linalg.matmul {{.*}} ins([[H2]], [[WD]] : tensor<16x256xf32>, tensor<64x256xf32>) {{.*}} loc("down"(
// CHECK: [[Y:%[a-z0-9_.]+]] = tensor.expand_shape [[D]] {{.*}} into tensor<2x8x64xf32>
// CHECK: return [[Y]] : tensor<2x8x64xf32>
// CHECK-NOT: linalg.transpose

// PARSED-LABEL: func.func @forward(%arg0: tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
// PARSED-COUNT-3: linalg.matmul
// PARSED-NOT: linalg.transpose

// BF16-LABEL: func.func @forward(%x: tensor<2x8x64xbf16>) -> (tensor<2x8x64xbf16>)
// BF16: arith.constant dense_resource<gate_weight> : tensor<256x64xbf16>
// BF16: linalg.matmul {{.*}} : tensor<16x64xbf16>, tensor<256x64xbf16>)
// BF16-NOT: f32>

// BF16-PARAMS-LABEL: func.func @forward(%x: tensor<2x8x64xbf16>, %gate_weight: tensor<256x64xbf16> {sgpu.param = "gate.weight"}, %up_weight: tensor<256x64xbf16> {sgpu.param = "up.weight"}, %down_weight: tensor<64x256xbf16> {sgpu.param = "down.weight"}) -> (tensor<2x8x64xbf16>)
// BF16-PARAMS: linalg.matmul {{.*}} %gate_weight : tensor<16x64xbf16>, tensor<256x64xbf16>)
// BF16-PARAMS-NOT: f32>
