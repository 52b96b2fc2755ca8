// sgpu-tensor-map-params where sgpu-compile runs it: right after
// convert-gpu-to-nvvm in the gpu.module nest.
// RUN: sparse-opt %s --pass-pipeline="builtin.module(gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},sgpu-tensor-map-params,reconcile-unrealized-casts))" | FileCheck %s

// From a gpu.func: convert-gpu-to-nvvm keeps the attribute on the llvm.func
// and, with bare memref pointers, the argument indices (the tensor map is
// argument 1 before and after).
// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME: %{{.*}}: !llvm.ptr,
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<16 x i64>, nvvm.grid_constant},
// CHECK-SAME: %{{.*}}: i32)
// CHECK-NOT: sgpu.tensor_map_args
// CHECK: llvm.inline_asm has_side_effects "prefetch.tensormap [$0];", "l" %arg1
gpu.module @k {
  gpu.func @kernel(%out: memref<64xf32>, %map: !llvm.ptr, %n: i32) kernel
      attributes {sgpu.tensor_map_args = array<i64: 1>} {
    llvm.inline_asm has_side_effects "prefetch.tensormap [$0];", "l" %map : (!llvm.ptr) -> ()
    gpu.return
  }
}
