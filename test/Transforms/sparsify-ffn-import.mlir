// sgpu-sparsify-ffn on the FFNs as the importers write them (torch.fx and
// ONNX): the MLP (linear + bias, ReLU, linear + bias; F = 128) and the gated
// FFN on a [2, 8, 64] input (F = 256), in f16/bf16.
// RUN: %python %S/../Import/Inputs/fx_models.py mlp --dtype f16 --weights constants | sparse-opt --sgpu-sparsify-ffn="tile=128" -verify-diagnostics | FileCheck %s --check-prefix=MLP
// RUN: %python %S/../Import/Inputs/onnx_models.py mlp --dtype f16 --weights constants | sparse-opt --sgpu-sparsify-ffn="tile=64 compression=8" -verify-diagnostics | FileCheck %s --check-prefix=MLP-ONNX
// RUN: %python %S/../Import/Inputs/onnx_models.py mlp-3d --opset 14 --dtype bf16 --weights constants | sparse-opt --sgpu-sparsify-ffn="tile=128" -verify-diagnostics | FileCheck %s --check-prefix=MLP3D
// RUN: %python %S/../Import/Inputs/fx_models.py gated-ffn --dtype bf16 --weights constants | sparse-opt --sgpu-sparsify-ffn -verify-diagnostics | FileCheck %s --check-prefix=GATED
// RUN: %python %S/../Import/Inputs/onnx_models.py gated-ffn --dtype f16 --weights constants | sparse-opt --sgpu-sparsify-ffn -verify-diagnostics | FileCheck %s --check-prefix=GATED
// The MLP with the default tile (256 > F = 128): one partial tile per row.
// RUN: %python %S/../Import/Inputs/fx_models.py mlp --dtype f16 --weights constants | sparse-opt --sgpu-sparsify-ffn 2>&1 | FileCheck %s --check-prefix=TILE
// What is left alone, with a remark at the down projection's location (the
// model's source line for torch.fx): the f32 import and llama's two SiLU
// MLPs.
// RUN: %python %S/../Import/Inputs/onnx_models.py gated-ffn --weights constants | sparse-opt --sgpu-sparsify-ffn -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32
// RUN: %python %S/../Import/Inputs/fx_models.py llama --dtype f16 --weights constants | sparse-opt --sgpu-sparsify-ffn -o /dev/null 2>&1 | FileCheck %s --check-prefix=SILU

// The bias add and ReLU of fc1 stay; fc2's matmul becomes the consumer of
// the packed ReLU output, and fc2's bias add reads its result.
// MLP-LABEL: func.func @forward(%arg0: tensor<4x64xf16>) -> tensor<4x32xf16>
// MLP: linalg.matmul
// MLP: arith.addf
// MLP: %[[H:.*]] = linalg.generic
// MLP: arith.maximumf
// MLP: %[[P:.*]] = sgpu.twell_pack %[[H]] {{.*}}: tensor<4x128xf16> -> !sgpu.twell<4x128xf16, #sgpu.twell<tile = 128, compression = 4>>
// MLP: %[[W2:.*]] = arith.constant dense_resource<fc2_weight> : tensor<32x128xf16>
// MLP-NOT: linalg.matmul
// MLP: %[[Y:.*]] = sgpu.twell_ffn %[[P]], %[[W2]] : !sgpu.twell<4x128xf16, #sgpu.twell<tile = 128, compression = 4>>, tensor<32x128xf16> -> tensor<4x32xf16>
// MLP: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[Y]], %{{.*}} : tensor<4x32xf16>, tensor<32xf16>)
// MLP: return %[[YB]]

// MLP-ONNX-LABEL: func.func @forward(%arg0: tensor<8x64xf16>) -> tensor<8x32xf16>
// MLP-ONNX: %[[P:.*]] = sgpu.twell_pack %{{.*}} {{.*}}: tensor<8x128xf16> -> !sgpu.twell<8x128xf16, #sgpu.twell<tile = 64, compression = 8>>
// MLP-ONNX: sgpu.twell_ffn %[[P]], %{{.*}} : {{.*}}, tensor<32x128xf16> -> tensor<8x32xf16>
// MLP-ONNX-NOT: linalg.matmul

// The ReLU runs on [2, 8, 128]; the pack reads it collapsed to [16, 128].
// MLP3D-LABEL: func.func @forward(%arg0: tensor<2x8x64xbf16>) -> tensor<2x8x32xbf16>
// MLP3D: %[[H:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x8x128xbf16>)
// MLP3D: %[[H2:.*]] = tensor.collapse_shape %[[H]] {{\[\[}}0, 1], [2]] : tensor<2x8x128xbf16> into tensor<16x128xbf16>
// MLP3D: %[[P:.*]] = sgpu.twell_pack %[[H2]] {{.*}}: tensor<16x128xbf16>
// MLP3D: sgpu.twell_ffn %[[P]], %{{.*}} : {{.*}}, tensor<32x128xbf16> -> tensor<16x32xbf16>
// MLP3D-NOT: linalg.matmul
// MLP3D: tensor.expand_shape {{.*}} into tensor<2x8x32xbf16>

// Gated: the gate GEMM and ReLU stay, the up projection's collapsed input
// and its weight go to the consumer; the product and the up GEMM are gone.
// GATED-LABEL: func.func @forward(%arg0: tensor<2x8x64x{{b?}}f16>) -> tensor<2x8x64x{{b?}}f16>
// GATED: %[[X1:.*]] = tensor.collapse_shape %arg0
// GATED: %[[G:.*]] = linalg.matmul {{.*}} ins(%[[X1]],
// GATED: %[[G3:.*]] = tensor.expand_shape %[[G]]
// GATED: %[[H:.*]] = linalg.generic {{.*}} ins(%[[G3]] :
// GATED: arith.maximumf
// GATED: %[[H2:.*]] = tensor.collapse_shape %[[H]] {{\[\[}}0, 1], [2]] : tensor<2x8x256x{{b?}}f16> into tensor<16x256x{{b?}}f16>
// GATED: %[[P:.*]] = sgpu.twell_pack %[[H2]] {{.*}}: tensor<16x256x{{b?}}f16> -> !sgpu.twell<16x256x{{b?}}f16, #sgpu.twell<tile = 256, compression = 4>>
// GATED: %[[WU:.*]] = arith.constant dense_resource<{{.*}}> : tensor<256x64x{{b?}}f16>
// GATED: %[[X2:.*]] = tensor.collapse_shape %arg0
// GATED: %[[WD:.*]] = arith.constant dense_resource<{{.*}}> : tensor<64x256x{{b?}}f16>
// GATED: %[[Y:.*]] = sgpu.twell_ffn %[[P]], %[[WD]] up(%[[X2]], %[[WU]] : tensor<16x64x{{b?}}f16>, tensor<256x64x{{b?}}f16>) : {{.*}} -> tensor<16x64x{{b?}}f16>
// GATED: %[[Y3:.*]] = tensor.expand_shape %[[Y]] {{.*}} into tensor<2x8x64x{{b?}}f16>
// GATED: return %[[Y3]]
// GATED-NOT: linalg.matmul
// GATED-NOT: arith.mulf

// TILE-NOT: remark
// TILE: sgpu.twell_pack %{{.*}} -> !sgpu.twell<4x128xf16, #sgpu.twell<tile = 256, compression = 4>>
// F32: remark: loc("/down/MatMul"): FFN not sparsified (TwELL): the FFN computes in 'f32'; TwELL packs 16-bit values (f16 or bf16)
// SILU: models.py:{{[0-9]+}}:0: remark: FFN not sparsified (TwELL): its activation is SiLU, not ReLU
// SILU: models.py:{{[0-9]+}}:0: remark: FFN not sparsified (TwELL): its activation is SiLU, not ReLU
// SILU-NOT: remark
