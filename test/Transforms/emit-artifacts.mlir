// RUN: rm -rf %t && sparse-opt %s -sgpu-emit-artifacts="output-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/program.txt
// RUN: od -An -tx1 %t/const0.bin | FileCheck %s --check-prefix=BYTES
// RUN: FileCheck %s --check-prefix=SUMMARY --allow-empty < %t/summary.txt
// RUN: FileCheck %s --check-prefix=SIG < %t/signature.json

// A host function of buffers and launches becomes the runtime program; the
// splat constant is written out element by element.
// CHECK: sparseopt-program 4
// CHECK-NEXT: # host function @forward
// CHECK-NEXT: module kernels.ptx
// CHECK-NEXT: buffer 0 input 0 64
// CHECK-NEXT: arena 256
// CHECK-NEXT: buffer 1 constant const0.bin 8
// CHECK-NEXT: buffer 2 temp 16 arena 0
// CHECK-NEXT: buffer 3 output 0 32
// CHECK-NEXT: launch k1 grid 4 1 1 block 32 1 1 smem 0 args b0 b1 b2 i32:7 i64:9
// CHECK-NEXT: launch k2 grid 1 2 3 block 64 1 1 smem 1024 args b2 b3
// CHECK-NEXT: end
// CHECK-EMPTY:
// BYTES: 01 00 00 00 01 00 00 00
// SUMMARY-NOT: kernel
// SUMMARY: peak device memory: 360 bytes (params 0, inputs 64, outputs 32, constants 8, temporaries 256, of which 256 in the arena shared by liveness instead of 256)
// The signature lists the host function's memref arguments and results,
// and the program's device memory by role.
// SIG: {"function":"forward","inputs":[{"shape":[4,8],"dtype":"f16"}],"outputs":[{"shape":[8],"dtype":"f32"}],"memory":{"params":0,"inputs":64,"outputs":32,"constants":8,"temps":0,"arena":256,"temps_unpacked":256,"peak":360}}
module attributes {gpu.container_module} {
  memref.global "private" constant @c : memref<2xi32> = dense<1>
  func.func @forward(%x: memref<4x8xf16>) -> memref<8xf32> {
    %c = memref.get_global @c : memref<2xi32>
    %t = memref.alloc() : memref<4xf32>
    %y = memref.alloc() : memref<8xf32>
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %s = arith.constant 7 : i32
    %l = arith.constant 9 : i64
    %smem = arith.constant 1024 : i32
    gpu.launch_func @m::@k1 blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<4x8xf16>, %c : memref<2xi32>, %t : memref<4xf32>, %s : i32, %l : i64)
    gpu.launch_func @m::@k2 blocks in (%c1, %c2, %c3) threads in (%c64, %c1, %c1) dynamic_shared_memory_size %smem args(%t : memref<4xf32>, %y : memref<8xf32>)
    memref.dealloc %t : memref<4xf32>
    return %y : memref<8xf32>
  }
  gpu.module @m {
    gpu.func @k1(%a: memref<4x8xf16>, %b: memref<2xi32>, %c: memref<4xf32>, %s: i32, %l: i64) kernel { gpu.return }
    gpu.func @k2(%a: memref<4xf32>, %b: memref<8xf32>) kernel { gpu.return }
  }
}
