// The ladder rewrite on models as the importers write them (torch.fx and
// ONNX llama: residual adds as linalg.generic, RMSNorm recognized).
// RUN: %python %S/../Import/Inputs/fx_models.py llama | sparse-opt --sgpu-ladder-residual | FileCheck %s
// RUN: %python %S/../Import/Inputs/onnx_models.py all-reduce | not sparse-opt --sgpu-ladder-residual 2>&1 | FileCheck %s --check-prefix=ONNX

// Two layers, four blocks: the first two norms read the embedding, the
// third the first residual sum, the fourth the second; the final norm the
// last sum.
// CHECK-LABEL: func.func @forward
// CHECK: sgpu.rms_norm %[[X0:[0-9a-z_]+]],
// CHECK: sgpu.rms_norm %[[X0]],
// CHECK: %[[X1:[0-9a-z_]+]] = linalg.generic {{.*}} ins(%[[X0]], %{{.*}}) {{.*}} {sgpu.ladder_block}
// CHECK: sgpu.rms_norm %[[X1]],
// CHECK: %[[X2:[0-9a-z_]+]] = linalg.generic {{.*}} ins(%[[X1]], %{{.*}}) {{.*}} {sgpu.ladder_block}
// CHECK: sgpu.rms_norm %[[X2]],
// CHECK: %[[X3:[0-9a-z_]+]] = linalg.generic {{.*}} ins(%[[X2]], %{{.*}}) {{.*}} {sgpu.ladder_block}
// CHECK: %[[X4:[0-9a-z_]+]] = linalg.generic {{.*}} ins(%[[X3]], %{{.*}}) {{.*}} {sgpu.ladder_block}
// CHECK: sgpu.rms_norm %[[X4]],

// The ONNX all-reduce model (an o_proj whose all-reduce is returned) has no
// residual chain.
// ONNX: error: loc("/o_proj/AllReduce"): not a residual block: the all-reduce's result is not added to the residual stream alone (x = x + all_reduce(block(norm(x))))
