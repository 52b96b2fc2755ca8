// The torch.fx importer on the 2-layer Llama decoder of test/python/models.py:
// the parameters and buffers the graph reads are params after the ids, named
// by their qualified names (the causal mask buffer is read, recognized and
// dropped: no param), the embedding is sgpu.embedding, the decomposed
// RMSNorms become sgpu.rms_norm, the rotary embeddings (x * cos +
// rotate_half(x) * sin) become sgpu.rope, the matmul -> scale ->
// masked_fill(causal mask buffer, -inf) -> softmax -> matmul attention
// becomes sgpu.attention {causal}, the all_reduce markers become
// sgpu.all_reduce. With --weights constants the weights are dense_resource
// constants instead.
// RUN: %python %S/Inputs/fx_models.py llama > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=SIG < %t.mlir
// RUN: FileCheck %s --check-prefix=RMS < %t.mlir
// RUN: FileCheck %s --check-prefix=ATTN < %t.mlir
// RUN: FileCheck %s --check-prefix=ROPE < %t.mlir
// RUN: FileCheck %s --check-prefix=AR < %t.mlir
// RUN: sparse-opt %t.mlir | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/fx_models.py llama --weights constants > %t.const.mlir
// RUN: FileCheck %s --check-prefix=CONST < %t.const.mlir
// RUN: sparse-opt %t.const.mlir | FileCheck %s --check-prefix=CONST-PARSED

// CHECK-LABEL: func.func @forward(%ids: tensor<1x16xi64>, %embed_weight: tensor<128x64xf32> {sgpu.param = "embed.weight"}, %layers_0_attn_norm_weight: tensor<64xf32> {sgpu.param = "layers.0.attn_norm.weight"}, %layers_0_attn_q_weight: tensor<64x64xf32> {sgpu.param = "layers.0.attn.q.weight"},
// CHECK-SAME: %cos: tensor<1x1x16x16xf32> {sgpu.param = "cos"}, %sin: tensor<1x1x16x16xf32> {sgpu.param = "sin"},
// CHECK-SAME: %norm_weight: tensor<64xf32> {sgpu.param = "norm.weight"}, %head_weight: tensor<128x64xf32> {sgpu.param = "head.weight"}) -> (tensor<1x16x128xf32>)
// CHECK: [[X:%[a-z0-9_.]+]] = sgpu.embedding %embed_weight, %ids : tensor<128x64xf32>, tensor<1x16xi64> -> tensor<1x16x64xf32> loc("embed"("models.py":{{[0-9]+}}:0))
// CHECK: [[N:%[a-z0-9_.]+]] = sgpu.rms_norm [[X]], %layers_0_attn_norm_weight {epsilon = 1.000000000e-06 : f32} : tensor<1x16x64xf32>, tensor<64xf32> -> tensor<1x16x64xf32> loc("layers.0.attn_norm/{{.*}}"("models.py":{{[0-9]+}}:0))
// CHECK: linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} ins({{%[a-z0-9_.]+}}, %layers_0_attn_q_weight : {{.*}} loc("layers.0.attn.q"(
// CHECK: [[Q:%[a-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[K:%[a-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[V:%[a-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[QR:%[a-z0-9_.]+]] = sgpu.rope [[Q]], %cos, %sin : tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32> -> tensor<1x4x16x16xf32> loc("layers.0.attn/{{.*}}"("models.py":{{[0-9]+}}:0))
// CHECK: [[KR:%[a-z0-9_.]+]] = sgpu.rope [[K]], %cos, %sin : tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32> -> tensor<1x4x16x16xf32>
// CHECK-NOT: linalg.softmax
// CHECK: [[A:%[a-z0-9_.]+]] = sgpu.attention [[QR]], [[KR]], [[V]] {causal, scale = 2.500000000e-01 : f32} : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32> loc("layers.0.attn/{{.*}}"("models.py":{{[0-9]+}}:0))
// CHECK: linalg.transpose ins([[A]] : tensor<1x4x16x16xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK: linalg.matmul {{.*}} loc("layers.0.attn.o"(
// CHECK: sgpu.all_reduce {{.*}} : tensor<1x16x64xf32> loc("layers.0/all_reduce"("models.py":{{[0-9]+}}:0))
// CHECK: linalg.matmul {{.*}} ins({{%[a-z0-9_.]+}}, %head_weight : tensor<16x64xf32>, tensor<128x64xf32>)
// CHECK: return {{%[a-z0-9_.]+}} : tensor<1x16x128xf32>

// No weight data, mask, gather loop, concat, softmax, batched matmul or pow is left.
// CHECK-NOT: dense_resource
// CHECK-NOT: tensor.extract
// CHECK-NOT: tensor.concat
// CHECK-NOT: linalg.batch_matmul

// 23 params (the decoder's parameters, cos and sin), none for the mask.
// SIG-COUNT-23: {sgpu.param = "
// SIG-NOT: {sgpu.param = "
// SIG-NOT: sgpu.param = "mask"

// RMS-COUNT-5: sgpu.rms_norm
// RMS-NOT: sgpu.rms_norm
// RMS-NOT: math.rsqrt

// ATTN-COUNT-2: sgpu.attention {{.*}} {causal, scale = 2.500000000e-01 : f32}
// ATTN-NOT: sgpu.attention
// ATTN-NOT: linalg.softmax

// ROPE-COUNT-4: sgpu.rope {{%[a-z0-9_.]+}}, %cos, %sin
// ROPE-NOT: sgpu.rope
// ROPE-NOT: %neg

// AR-COUNT-4: sgpu.all_reduce
// AR-NOT: sgpu.all_reduce

// PARSED-LABEL: func.func @forward(%arg0: tensor<1x16xi64>, %arg1: tensor<128x64xf32> {sgpu.param = "embed.weight"}
// PARSED-SAME: -> tensor<1x16x128xf32>
// PARSED: sgpu.embedding %arg1, %arg0 : tensor<128x64xf32>, tensor<1x16xi64> -> tensor<1x16x64xf32>
// PARSED-COUNT-15: linalg.matmul
// PARSED-NOT: linalg.matmul

// CONST-LABEL: func.func @forward(%ids: tensor<1x16xi64>) -> (tensor<1x16x128xf32>)
// CONST: [[TABLE:%[a-z0-9_.]+]] = arith.constant dense_resource<embed_weight> : tensor<128x64xf32> loc("embed.weight")
// CONST: sgpu.embedding [[TABLE]], %ids : tensor<128x64xf32>, tensor<1x16xi64> -> tensor<1x16x64xf32>
// CONST: [[NW:%[a-z0-9_.]+]] = arith.constant dense_resource<layers_0_attn_norm_weight> : tensor<64xf32>
// CONST: sgpu.rms_norm {{%[a-z0-9_.]+}}, [[NW]]
// CONST: [[COS:%[a-z0-9_.]+]] = arith.constant dense_resource<cos> : tensor<1x1x16x16xf32>
// CONST: [[SIN:%[a-z0-9_.]+]] = arith.constant dense_resource<sin> : tensor<1x1x16x16xf32>
// CONST: sgpu.rope {{%[a-z0-9_.]+}}, [[COS]], [[SIN]]
// CONST: [[HW:%[a-z0-9_.]+]] = arith.constant dense_resource<head_weight> : tensor<128x64xf32>
// CONST: linalg.matmul {{.*}} ins({{%[a-z0-9_.]+}}, [[HW]] : tensor<16x64xf32>, tensor<128x64xf32>)
// CONST-NOT: sgpu.param
// CONST-NOT: dense_resource<mask>

// CONST-PARSED-LABEL: func.func @forward(%arg0: tensor<1x16xi64>) -> tensor<1x16x128xf32>
// CONST-PARSED-COUNT-15: linalg.matmul
// CONST-PARSED-NOT: linalg.matmul
