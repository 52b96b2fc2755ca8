// On an sm_90 target every kernel waits for its predecessor and then lets
// its dependents start, both at its entry, and its run-stage launches are
// marked sgpu.programmatic; a prepare-stage launch is not marked, and a
// gpu.module for an older chip is left alone.
// RUN: sparse-opt %s -split-input-file -sgpu-programmatic-launch | FileCheck %s

// CHECK-LABEL: func.func @host
// CHECK: gpu.launch_func @hopper::@scale {{.*}} {sgpu.stage = "prepare"}
// CHECK-NEXT: gpu.launch_func @hopper::@scale {{.*}} {sgpu.programmatic}
// CHECK-NEXT: gpu.launch_func @hopper::@shift {{.*}} {sgpu.programmatic}
// CHECK-NEXT: gpu.launch_func @ampere::@scale {{.*}}memref<16xf32>){{$}}
// CHECK: gpu.module @hopper
// CHECK: gpu.func @scale
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: gpu.thread_id
// CHECK: gpu.func @shift
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK: gpu.module @ampere
// CHECK-NOT: griddepcontrol
module attributes {gpu.container_module} {
  func.func @host(%a: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @hopper::@scale blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>) {sgpu.stage = "prepare"}
    gpu.launch_func @hopper::@scale blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    gpu.launch_func @hopper::@shift blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    gpu.launch_func @ampere::@scale blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    return
  }
  gpu.module @hopper [#nvvm.target<chip = "sm_90a">] {
    gpu.func @scale(%x: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %y = arith.mulf %v, %v : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
    gpu.func @shift(%x: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %y = arith.addf %v, %v : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
  }
  gpu.module @ampere [#nvvm.target<chip = "sm_80">] {
    gpu.func @scale(%x: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %y = arith.mulf %v, %v : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
  }
}

// -----

// A program with collectives keeps plain launches: kernels placed early,
// waiting, could hold multiprocessors that the NCCL kernels of the
// communication stream need (reserve-sms keeps them free of GEMM grids).
// CHECK-LABEL: func.func @with_collective
// CHECK: gpu.launch_func @hopper::@scale {{.*}}memref<16xf32>){{$}}
// CHECK: sgpu.all_reduce_call
// CHECK-NOT: griddepcontrol
module attributes {gpu.container_module} {
  func.func @with_collective(%a: memref<16xf32>, %r: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @hopper::@scale blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    %t = sgpu.all_reduce_call %a into %r : memref<16xf32>, memref<16xf32>
    sgpu.all_reduce_sync %t, %r : memref<16xf32>
    return
  }
  gpu.module @hopper [#nvvm.target<chip = "sm_90a">] {
    gpu.func @scale(%x: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<16xf32>
      %y = arith.mulf %v, %v : f32
      memref.store %y, %x[%t] : memref<16xf32>
      gpu.return
    }
  }
}
