// Model-level options are sgpu.* module attributes, verified by the dialect.
// RUN: sparse-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK: module attributes {sgpu.ladder_layers = 4 : i64, sgpu.twell = #sgpu.twell<tile = 256, compression = 4>}
module attributes {sgpu.ladder_layers = 4 : i64, sgpu.twell = #sgpu.twell<tile = 256, compression = 4>} {
}

// -----

// expected-error @+1 {{'sgpu.ladder_layers' must be a positive integer (the number of ladder-trained layers), got 0 : i64}}
module attributes {sgpu.ladder_layers = 0 : i64} {
}

// -----

// expected-error @+1 {{'sgpu.twell' must be a #sgpu.twell<tile = T, compression = C> attribute, got 256 : i64}}
module attributes {sgpu.twell = 256 : i64} {
}

// -----

// expected-error @+1 {{unknown sgpu attribute 'sgpu.ladder' (known: sgpu.ladder_layers, sgpu.twell, sgpu.tensor_map_args, sgpu.stage, sgpu.persistent_grid, sgpu.programmatic, sgpu.ladder_block, sgpu.stat, sgpu.stat_total, sgpu.stat_limit, sgpu.twell_break_even, sgpu.twell_consumer, sgpu.twell_union_break_even, sgpu.config)}}
module attributes {sgpu.ladder = 2 : i64} {
}

// -----

module {
  // expected-error @+1 {{'sgpu.ladder_layers' is a module attribute (model option)}}
  func.func @f() attributes {sgpu.ladder_layers = 2 : i64} {
    return
  }
}

// -----

// sgpu.stage marks a launch of the program's prepare stage.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @stage_ok() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.stage = "prepare"}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @stage_value() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'sgpu.stage' must be "prepare" (the only stage besides the default run stage), got "run"}}
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.stage = "run"}
    return
  }
}

// -----

// sgpu.persistent_grid: a persistent launch the runtime sizes at load
// (units, cluster, reserved multiprocessors).
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @persistent_ok() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.persistent_grid = array<i64: 512, 2, 8>}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @persistent_cluster() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'sgpu.persistent_grid' is a gpu.launch_func attribute array<i64: units >= 1, cluster 1 to 16, reserved >= 0>, got array<i64: 512, 32, 0> on 'gpu.launch_func'}}
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.persistent_grid = array<i64: 512, 32, 0>}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @persistent_units() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'sgpu.persistent_grid' is a gpu.launch_func attribute array<i64: units >= 1, cluster 1 to 16, reserved >= 0>, got array<i64: 0, 1, 0>}}
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.persistent_grid = array<i64: 0, 1, 0>}
    return
  }
}

// -----

// expected-error @+1 {{'sgpu.persistent_grid' is a gpu.launch_func attribute array<i64: units >= 1, cluster 1 to 16, reserved >= 0>, got array<i64: 4, 1, 0> on 'func.func'}}
func.func @persistent_on_func() attributes {sgpu.persistent_grid = array<i64: 4, 1, 0>} { return }

// -----

// expected-error @+1 {{'sgpu.stage' is a gpu.launch_func attribute, not an attribute of 'func.func'}}
func.func @stage_on_func() attributes {sgpu.stage = "prepare"} { return }

// -----

// expected-error @+1 {{'sgpu.ladder_block' is a unit attribute (on a residual add), got 1 : i64}}
func.func @ladder_block_value() attributes {sgpu.ladder_block = 1} { return }

// -----

// sgpu.replicated marks an argument that is the same on every rank.
// CHECK-LABEL: func.func @replicated
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {sgpu.replicated}, %{{.*}}: tensor<4xf32>)
func.func @replicated(%x: tensor<4xf32> {sgpu.replicated}, %w: tensor<4xf32>) { return }

// -----

// expected-error @+1 {{'sgpu.replicated' on argument #1 is a unit attribute, got true}}
func.func @replicated_value(%x: tensor<4xf32>, %w: tensor<4xf32> {sgpu.replicated = true}) { return }

// -----

// expected-error @+1 {{unknown sgpu argument attribute 'sgpu.shard' on argument #0 (known: sgpu.replicated, sgpu.param, sgpu.state)}}
func.func @unknown_argument_attribute(%x: tensor<4xf32> {sgpu.shard}) { return }

// -----

// expected-error @+1 {{'sgpu.replicated' is a function argument attribute (an argument that is the same on every rank), not an attribute of 'func.func'}}
func.func @replicated_on_function() attributes {sgpu.replicated} { return }

// -----

// sgpu.programmatic: a run-stage launch of a kernel that waits for its
// predecessor itself (sgpu-programmatic-launch).
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @programmatic_ok() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.programmatic}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @programmatic_value() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'sgpu.programmatic' is a unit gpu.launch_func attribute, got true on 'gpu.launch_func'}}
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.programmatic = true}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f() kernel { gpu.return }
  }
  func.func @programmatic_prepare() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'sgpu.programmatic' marks run-stage launches only; this launch is in the prepare stage}}
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {sgpu.programmatic, sgpu.stage = "prepare"}
    return
  }
}

// -----

// expected-error @+1 {{'sgpu.programmatic' is a unit gpu.launch_func attribute, got unit on 'func.func'}}
func.func @programmatic_on_func() attributes {sgpu.programmatic} {
  return
}
