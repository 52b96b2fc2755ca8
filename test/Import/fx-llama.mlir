// The torch.fx importer on the 2-layer Llama decoder of test/python/models.py:
// the decomposed RMSNorms become sgpu.rms_norm, the matmul -> scale ->
// masked_fill(causal mask buffer, -inf) -> softmax -> matmul attention
// becomes sgpu.attention {causal} (the mask buffer is the causal mask, so it
// is dropped), the all_reduce markers become sgpu.all_reduce, rotary
// embeddings are slices, a negation and a concat.
// RUN: %python %S/Inputs/fx_models.py llama > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=RMS < %t.mlir
// RUN: FileCheck %s --check-prefix=ATTN < %t.mlir
// RUN: FileCheck %s --check-prefix=AR < %t.mlir
// RUN: sparse-opt %t.mlir | FileCheck %s --check-prefix=PARSED

// CHECK-LABEL: func.func @forward(%ids: tensor<1x16xi64>) -> (tensor<1x16x128xf32>)
// CHECK: [[TABLE:%[a-z0-9_.]+]] = arith.constant dense_resource<embed_weight> : tensor<128x64xf32>
// CHECK: [[X:%[a-z0-9_.]+]] = linalg.generic {{.*}} ins(%ids : tensor<1x16xi64>)
// CHECK: tensor.extract [[TABLE]]
// CHECK: [[NW:%[a-z0-9_.]+]] = arith.constant dense_resource<layers_0_attn_norm_weight> : tensor<64xf32>
// CHECK: [[N:%[a-z0-9_.]+]] = sgpu.rms_norm [[X]], [[NW]] {epsilon = 1.000000000e-06 : f32} : tensor<1x16x64xf32>, tensor<64xf32> -> tensor<1x16x64xf32> loc("layers.0.attn_norm/{{.*}}"("models.py":{{[0-9]+}}:0))
// CHECK: linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} loc("layers.0.attn.q"(
// CHECK: [[Q:%[a-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[K:%[a-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: [[V:%[a-z0-9_.]+]] = linalg.transpose {{.*}} permutation = [0, 2, 1, 3]
// CHECK: tensor.extract_slice [[Q]][0, 0, 0, 8] [1, 4, 16, 8] [1, 1, 1, 1]
// CHECK: arith.negf
// CHECK: tensor.extract_slice [[Q]][0, 0, 0, 0] [1, 4, 16, 8] [1, 1, 1, 1]
// CHECK: tensor.concat dim(3)
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK: [[QR:%[a-z0-9_.]+]] = linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK: tensor.extract_slice [[K]][0, 0, 0, 8]
// CHECK: tensor.concat dim(3)
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK: [[KR:%[a-z0-9_.]+]] = linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK-NOT: linalg.softmax
// CHECK: [[A:%[a-z0-9_.]+]] = sgpu.attention [[QR]], [[KR]], [[V]] {causal, scale = 2.500000000e-01 : f32} : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32> loc("layers.0.attn/{{.*}}"("models.py":{{[0-9]+}}:0))
// CHECK: linalg.transpose ins([[A]] : tensor<1x4x16x16xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK: linalg.matmul {{.*}} loc("layers.0.attn.o"(
// CHECK: sgpu.all_reduce {{.*}} : tensor<1x16x64xf32> loc("layers.0/all_reduce"("models.py":{{[0-9]+}}:0))
// CHECK: [[HW:%[a-z0-9_.]+]] = arith.constant dense_resource<head_weight> : tensor<128x64xf32>
// CHECK: linalg.matmul {{.*}} ins({{%[a-z0-9_.]+}}, [[HW]] : tensor<16x64xf32>, tensor<128x64xf32>)
// CHECK: return {{%[a-z0-9_.]+}} : tensor<1x16x128xf32>

// No mask constant, softmax, batched matmul or pow is left.
// CHECK-NOT: dense_resource<mask>
// CHECK-NOT: linalg.batch_matmul

// RMS-COUNT-5: sgpu.rms_norm
// RMS-NOT: sgpu.rms_norm
// RMS-NOT: math.rsqrt

// ATTN-COUNT-2: sgpu.attention {{.*}} {causal, scale = 2.500000000e-01 : f32}
// ATTN-NOT: sgpu.attention
// ATTN-NOT: linalg.softmax

// AR-COUNT-4: sgpu.all_reduce
// AR-NOT: sgpu.all_reduce

// PARSED-LABEL: func.func @forward(%arg0: tensor<1x16xi64>) -> tensor<1x16x128xf32>
// PARSED-COUNT-15: linalg.matmul
// PARSED-NOT: linalg.matmul
