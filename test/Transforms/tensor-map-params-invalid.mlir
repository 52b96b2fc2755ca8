// sgpu-tensor-map-params checks `sgpu.tensor_map_args` against the lowered
// kernel's signature; every error is reported at the function.
// RUN: sparse-opt %s -split-input-file -sgpu-tensor-map-params -verify-diagnostics

gpu.module @m {
  // expected-error @+1 {{'sgpu.tensor_map_args' on 'gpu.func' @not_lowered: sgpu-tensor-map-params rewrites kernels lowered to llvm.func (run it after convert-gpu-to-nvvm)}}
  gpu.func @not_lowered(%a: !llvm.ptr) kernel attributes {sgpu.tensor_map_args = array<i64: 0>} {
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{@device_function has 'sgpu.tensor_map_args' but is not a kernel (no 'nvvm.kernel'): tensor maps are kernel parameters}}
  llvm.func @device_function(%a: !llvm.ptr) attributes {sgpu.tensor_map_args = array<i64: 0>} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{'sgpu.tensor_map_args' lists argument #2 but @out_of_range has 2 arguments}}
  llvm.func @out_of_range(%a: !llvm.ptr, %b: !llvm.ptr) attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64: 0, 2>} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{'sgpu.tensor_map_args' lists argument #0 but @no_arguments has 0 arguments}}
  llvm.func @no_arguments() attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64: 0>} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{tensor map argument #1 of @not_a_pointer must be '!llvm.ptr' (the generic address space), got 'i64'}}
  llvm.func @not_a_pointer(%a: !llvm.ptr, %b: i64) attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64: 1>} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{tensor map argument #0 of @global_pointer must be '!llvm.ptr' (the generic address space), got '!llvm.ptr<1>'}}
  llvm.func @global_pointer(%a: !llvm.ptr<1>) attributes {nvvm.kernel, sgpu.tensor_map_args = array<i64: 0>} {
    llvm.return
  }
}
