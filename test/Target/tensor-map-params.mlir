// A kernel that takes a TMA tensor map (sgpu.tensor_map on the host,
// `sgpu.tensor_map_args` on the kernel) through the GPU half of
// sgpu-compile: the map is a 128-byte, 64-byte-aligned by-value parameter
// whose generic address (cvta.param) reaches prefetch.tensormap, the program
// passes it as a `tmap:` argument, and ptxas assembles the PTX.
// REQUIRES: ptxas
// RUN: rm -rf %t
// RUN: sparse-opt %s --pass-pipeline="builtin.module(gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},sgpu-tensor-map-params,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa},sgpu-emit-artifacts{output-dir=%t})" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: %ptxas -arch=sm_90a %t/kernels.ptx -o %t/kernels.cubin

// PTX: .visible .entry prefetch_rows(
// PTX-NEXT: .param .u64 .ptr .align 1 prefetch_rows_param_0,
// PTX-NEXT: .param .align 64 .b8 prefetch_rows_param_1[128],
// PTX-NEXT: .param .u32 prefetch_rows_param_2
// PTX-NEXT: )
// PTX: mov.b64 [[PARAM:%rd[0-9]+]], prefetch_rows_param_1;
// PTX: cvta.param.u64 [[MAP:%rd[0-9]+]], [[PARAM]];
// PTX: prefetch.tensormap [[[MAP]]];

// PROGRAM: buffer 0 input 0 262144
// PROGRAM: buffer 1 output 0 256
// PROGRAM: launch prefetch_rows grid 1 1 1 block 32 1 1 smem 0 args b1 tmap:b0:f16:512x256:64x64:128 i32:512
module attributes {gpu.container_module} {
  func.func @main(%x: memref<512x256xf16>) -> memref<64xf32> {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %rows = arith.constant 512 : i32
    %out = memref.alloc() : memref<64xf32>
    %map = sgpu.tensor_map %x box [64, 64] swizzle 128 : memref<512x256xf16> -> !llvm.ptr
    gpu.launch_func @kernels::@prefetch_rows blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%out : memref<64xf32>, %map : !llvm.ptr, %rows : i32)
    return %out : memref<64xf32>
  }
  gpu.module @kernels [#nvvm.target<chip = "sm_90a", features = "+ptx85">] {
    gpu.func @prefetch_rows(%out: memref<64xf32>, %map: !llvm.ptr, %rows: i32) kernel
        attributes {sgpu.tensor_map_args = array<i64: 1>} {
      llvm.inline_asm has_side_effects "prefetch.tensormap [$0];", "l" %map : (!llvm.ptr) -> ()
      gpu.return
    }
  }
}
