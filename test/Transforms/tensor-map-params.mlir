// sgpu-tensor-map-params turns the arguments a lowered kernel lists in
// `sgpu.tensor_map_args` into 64-byte-aligned, 128-byte byval parameters
// marked grid-constant, and drops the attribute. It runs on any op: alone on
// the module or nested in gpu.module as sgpu-compile runs it.
// RUN: sparse-opt %s -split-input-file -sgpu-tensor-map-params | FileCheck %s
// RUN: sparse-opt %s -split-input-file --pass-pipeline="builtin.module(gpu.module(sgpu-tensor-map-params))" | FileCheck %s

// Listed arguments get the three attributes (an attribute already there is
// kept); the others, and kernels without the attribute, are left alone.
// CHECK-LABEL: llvm.func @two_maps(
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<16 x i64>, llvm.noalias, nvvm.grid_constant},
// CHECK-SAME: %{{.*}}: !llvm.ptr,
// CHECK-SAME: %{{.*}}: i32,
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<16 x i64>, nvvm.grid_constant})
// CHECK-SAME: attributes {nvvm.kernel}
// CHECK-LABEL: llvm.func @no_maps(
// CHECK-SAME: %{{.*}}: !llvm.ptr)
// CHECK-SAME: attributes {nvvm.kernel}
// CHECK-NOT: sgpu.tensor_map_args
gpu.module @m {
  llvm.func @two_maps(%a: !llvm.ptr {llvm.noalias}, %b: !llvm.ptr, %n: i32, %c: !llvm.ptr)
      attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64: 3, 0>} {
    llvm.return
  }
  llvm.func @no_maps(%a: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

// An empty list only drops the attribute.
// CHECK-LABEL: llvm.func @empty(
// CHECK-SAME: %{{.*}}: !llvm.ptr)
// CHECK-SAME: attributes {nvvm.kernel}
gpu.module @m {
  llvm.func @empty(%a: !llvm.ptr) attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64>} {
    llvm.return
  }
}
