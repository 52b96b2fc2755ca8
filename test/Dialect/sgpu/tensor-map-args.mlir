// `sgpu.tensor_map_args` marks the arguments of a kernel that receive an
// sgpu.tensor_map: an array<i64> of distinct non-negative argument indices on
// a function, checked by the dialect. (sgpu-tensor-map-params checks the
// indices against the lowered signature: tensor-map-params-invalid.mlir.)
// RUN: sparse-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME: sgpu.tensor_map_args = array<i64: 0, 2>
// CHECK-LABEL: llvm.func @lowered
// CHECK-SAME: sgpu.tensor_map_args = array<i64: 1>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @kernel(%a: !llvm.ptr, %b: memref<16xf32>, %c: !llvm.ptr) kernel
        attributes {sgpu.tensor_map_args = array<i64: 0, 2>} {
      gpu.return
    }
    llvm.func @lowered(%a: !llvm.ptr, %b: !llvm.ptr) attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64: 1>} {
      llvm.return
    }
  }
}

// -----

// expected-error @+1 {{'sgpu.tensor_map_args' is a kernel function attribute (the indices of its tensor map arguments), not an attribute of 'builtin.module'}}
module attributes {sgpu.tensor_map_args = array<i64: 0>} {
}

// -----

// expected-error @+1 {{'sgpu.tensor_map_args' must be an array<i64> of argument indices, got [0]}}
func.func @not_an_array(%a: !llvm.ptr) attributes {sgpu.tensor_map_args = [0]} {
  return
}

// -----

// expected-error @+1 {{'sgpu.tensor_map_args' lists a negative argument index (-1)}}
func.func @negative(%a: !llvm.ptr) attributes {sgpu.tensor_map_args = array<i64: -1>} {
  return
}

// -----

// expected-error @+1 {{'sgpu.tensor_map_args' lists argument #1 twice}}
func.func @twice(%a: !llvm.ptr, %b: !llvm.ptr) attributes {sgpu.tensor_map_args = array<i64: 1, 0, 1>} {
  return
}
