// Identical kernels (same body, attributes and block size; only the name
// differs) are merged into the first; every launch of the others is
// redirected to it. Kernels differing in a constant stay apart.
// RUN: sparse-opt %s -sgpu-merge-identical-kernels | FileCheck %s

// CHECK-LABEL: func.func @host
// CHECK: gpu.launch_func @kernels::@scale_0
// CHECK: gpu.launch_func @kernels::@scale_0
// CHECK: gpu.launch_func @kernels::@scale_2
// CHECK: gpu.launch_func @kernels::@scale_0
// CHECK: gpu.func @scale_0
// CHECK-NOT: gpu.func @scale_1
// CHECK: gpu.func @scale_2
// CHECK-NOT: gpu.func @scale_3
module attributes {gpu.container_module} {
  func.func @host(%a: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @kernels::@scale_0 blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    gpu.launch_func @kernels::@scale_1 blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    gpu.launch_func @kernels::@scale_2 blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    gpu.launch_func @kernels::@scale_3 blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @scale_0(%x: memref<16xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %c = arith.constant 2.0 : f32
      %y = arith.mulf %v, %c : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
    gpu.func @scale_1(%x: memref<16xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %c = arith.constant 2.0 : f32
      %y = arith.mulf %v, %c : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
    gpu.func @scale_2(%x: memref<16xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %c = arith.constant 3.0 : f32
      %y = arith.mulf %v, %c : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
    gpu.func @scale_3(%x: memref<16xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %c = arith.constant 2.0 : f32
      %y = arith.mulf %v, %c : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
  }
}
