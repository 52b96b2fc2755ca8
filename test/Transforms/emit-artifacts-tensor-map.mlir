// RUN: rm -rf %t && sparse-opt %s -sgpu-emit-artifacts="output-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/program.txt

// A kernel operand made by sgpu.tensor_map becomes a `tmap:` launch argument:
// the buffer, the element type, the dimensions and the box (outermost
// first, as in the memref type and the op) and the swizzle, for maps over an
// input, a temporary, a constant and the output. The map itself is not a
// program line (the runtime encodes it at each run).
// CHECK: sparseopt-program 4
// CHECK-NEXT: # host function @forward
// CHECK-NEXT: module kernels.ptx
// CHECK-NEXT: buffer 0 input 0 16777216
// CHECK-NEXT: buffer 1 input 1 4000
// CHECK-NEXT: arena 8192
// CHECK-NEXT: buffer 2 constant const0.bin 1920
// CHECK-NEXT: buffer 3 temp 8192 arena 0
// CHECK-NEXT: buffer 4 output 0 1024
// CHECK-NEXT: launch gemm grid 32 1 1 block 128 1 1 smem 0 args tmap:b0:f16:4096x2048:128x32:64 tmap:b3:bf16:64x64:64x64:128 b4 i32:7
// CHECK-NEXT: launch misc grid 1 1 1 block 32 1 1 smem 0 args tmap:b1:f32:1000:256:0 tmap:b2:i32:2x3x4x5x4:1x1x1x1x4:0 tmap:b4:f32:16x16:16x16:0 b0
// A reshape of a buffer (memref.collapse_shape, memref.expand_shape,
// memref.cast) is that buffer: a map over it has the reshaped dimensions.
// CHECK-NEXT: launch views grid 1 1 1 block 32 1 1 smem 0 args tmap:b0:f16:2048x4096:64x64:128 b0 b1
// CHECK-NOT: launch
module attributes {gpu.container_module} {
  memref.global "private" constant @c : memref<2x3x4x5x4xi32> = dense<3>
  func.func @forward(%x: memref<4096x2048xf16>, %v: memref<1000xf32>) -> memref<16x16xf32> {
    %c = memref.get_global @c : memref<2x3x4x5x4xi32>
    %t = memref.alloc() : memref<64x64xbf16>
    %y = memref.alloc() : memref<16x16xf32>
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %s = arith.constant 7 : i32
    %mx = sgpu.tensor_map %x box [128, 32] swizzle 64 : memref<4096x2048xf16> -> !llvm.ptr
    %mt = sgpu.tensor_map %t box [64, 64] swizzle 128 : memref<64x64xbf16> -> !llvm.ptr
    gpu.launch_func @m::@gemm blocks in (%c32, %c1, %c1) threads in (%c128, %c1, %c1) args(%mx : !llvm.ptr, %mt : !llvm.ptr, %y : memref<16x16xf32>, %s : i32)
    %mv = sgpu.tensor_map %v box [256] swizzle 0 : memref<1000xf32> -> !llvm.ptr
    %mc = sgpu.tensor_map %c box [1, 1, 1, 1, 4] swizzle 0 : memref<2x3x4x5x4xi32> -> !llvm.ptr
    %my = sgpu.tensor_map %y box [16, 16] swizzle 0 : memref<16x16xf32> -> !llvm.ptr
    gpu.launch_func @m::@misc blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%mv : !llvm.ptr, %mc : !llvm.ptr, %my : !llvm.ptr, %x : memref<4096x2048xf16>)
    %flat = memref.collapse_shape %x [[0, 1]] : memref<4096x2048xf16> into memref<8388608xf16>
    %grid = memref.expand_shape %flat [[0, 1]] output_shape [2048, 4096] : memref<8388608xf16> into memref<2048x4096xf16>
    %same = memref.cast %v : memref<1000xf32> to memref<1000xf32>
    %mg = sgpu.tensor_map %grid box [64, 64] swizzle 128 : memref<2048x4096xf16> -> !llvm.ptr
    gpu.launch_func @m::@views blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%mg : !llvm.ptr, %flat : memref<8388608xf16>, %same : memref<1000xf32>)
    memref.dealloc %t : memref<64x64xbf16>
    return %y : memref<16x16xf32>
  }
  gpu.module @m {
    gpu.func @gemm(%a: !llvm.ptr, %b: !llvm.ptr, %y: memref<16x16xf32>, %s: i32) kernel
        attributes {sgpu.tensor_map_args = array<i64: 0, 1>} { gpu.return }
    gpu.func @misc(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %x: memref<4096x2048xf16>) kernel
        attributes {sgpu.tensor_map_args = array<i64: 0, 1, 2>} { gpu.return }
    gpu.func @views(%a: !llvm.ptr, %b: memref<8388608xf16>, %c: memref<1000xf32>) kernel
        attributes {sgpu.tensor_map_args = array<i64: 0>} { gpu.return }
  }
}
