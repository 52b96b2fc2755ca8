// Why the TMA kernels keep `prefetch.tensormap` as inline PTX: in LLVM 22,
// `nvvm.prefetch tensormap` on a tensor map passed by value (what
// sgpu-tensor-map-params makes of it) writes two prefetches, one of the
// param's address and one of its generic address. The inline statement
// (test/Target/tensor-map-params.mlir) writes one. When this test fails
// because the duplicate is gone, the prefetch can become the NVVM op
// (docs/design.md, "NVVM ops: what was measured").
// REQUIRES: ptxas
// RUN: rm -rf %t
// RUN: sparse-opt %s --pass-pipeline="builtin.module(gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},sgpu-tensor-map-params,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa},sgpu-emit-artifacts{output-dir=%t})" -o /dev/null
// RUN: FileCheck %s < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a %t/kernels.ptx -o %t/kernels.cubin

// CHECK: .visible .entry prefetch_once(
// CHECK: mov.b64 [[PARAM:%rd[0-9]+]], prefetch_once_param_1;
// CHECK: cvta.param.u64 [[MAP:%rd[0-9]+]], [[PARAM]];
// CHECK: prefetch.param.tensormap [prefetch_once_param_1];
// CHECK-NEXT: prefetch.tensormap [[[MAP]]];
// CHECK-NEXT: ret;
module attributes {gpu.container_module} {
  func.func @main(%x: memref<512x256xf16>) -> memref<64xf32> {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = memref.alloc() : memref<64xf32>
    %map = sgpu.tensor_map %x box [64, 64] swizzle 128 : memref<512x256xf16> -> !llvm.ptr
    gpu.launch_func @kernels::@prefetch_once blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%out : memref<64xf32>, %map : !llvm.ptr)
    return %out : memref<64xf32>
  }
  gpu.module @kernels [#nvvm.target<chip = "sm_90a", features = "+ptx85">] {
    gpu.func @prefetch_once(%out: memref<64xf32>, %map: !llvm.ptr) kernel
        attributes {sgpu.tensor_map_args = array<i64: 1>} {
      nvvm.prefetch tensormap, %map : !llvm.ptr
      gpu.return
    }
  }
}
