// The torch.fx importer on grouped-query attention and on tied weights.
// Grouped-query attention: k and v repeated from 2 to 4 heads for the
// attention only (k as Hugging Face's repeat_kv writes it,
// x[:, :, None].expand(...).reshape(...), v with repeat_interleave) reach
// sgpu.attention un-repeated: its query head h reads k/v head h / 2, the
// head the repetition put there. Nothing of the repeated size is computed
// or stored.
// Tied: an embedding and an LM head sharing one weight (head.weight IS
// embed.weight) import as one param named by the first name, read by both
// ops; with --weights constants, one blob.
// RUN: %python %S/Inputs/fx_models.py gqa | FileCheck %s --check-prefix=GQA
// RUN: %python %S/Inputs/fx_models.py gqa | sparse-opt | FileCheck %s --check-prefix=GQA-PARSED
// RUN: %python %S/Inputs/fx_models.py tied | FileCheck %s --check-prefix=TIED
// RUN: %python %S/Inputs/fx_models.py tied | sparse-opt | FileCheck %s --check-prefix=TIED-PARSED
// RUN: %python %S/Inputs/fx_models.py tied --weights constants | FileCheck %s --check-prefix=TIED-CONST

// GQA-LABEL: func.func @forward(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x4x8x16xf32>)
// GQA-NOT: linalg.generic
// GQA-NOT: arith.constant
// GQA: [[O:%[a-z0-9_.]+]] = sgpu.attention %q, %k, %v {scale = 2.500000000e-01 : f32} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
// GQA-NEXT: return [[O]] : tensor<1x4x8x16xf32>

// GQA-PARSED: sgpu.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>

// TIED-LABEL: func.func @forward(%ids: tensor<1x8xi64>, %embed_weight: tensor<64x32xf32> {sgpu.param = "embed.weight"}) -> (tensor<1x8x64xf32>)
// TIED: sgpu.embedding %embed_weight, %ids : tensor<64x32xf32>, tensor<1x8xi64> -> tensor<1x8x32xf32>
// TIED: linalg.matmul {{.*}} ins(%{{[a-z0-9_.]+}}, %embed_weight : tensor<8x32xf32>, tensor<64x32xf32>) {{.*}} loc("head"(
// TIED-NOT: head.weight

// TIED-PARSED: func.func @forward(%{{.*}}: tensor<1x8xi64>, %[[W:.*]]: tensor<64x32xf32> {sgpu.param = "embed.weight"}) -> tensor<1x8x64xf32>
// TIED-PARSED: sgpu.embedding %[[W]]
// TIED-PARSED: linalg.matmul {{.*}} ins(%{{.*}}, %[[W]] :

// TIED-CONST-LABEL: func.func @forward(%ids: tensor<1x8xi64>) -> (tensor<1x8x64xf32>)
// TIED-CONST: [[W:%[a-z0-9_.]+]] = arith.constant dense_resource<embed_weight> : tensor<64x32xf32>
// TIED-CONST: sgpu.embedding [[W]], %ids
// TIED-CONST: linalg.matmul {{.*}} ins(%{{[a-z0-9_.]+}}, [[W]] : tensor<8x32xf32>, tensor<64x32xf32>)
// TIED-CONST-NOT: dense_resource<
// TIED-CONST: embed_weight: "0x
// TIED-CONST-NOT: head_weight
