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

// expected-error @+1 {{unknown sgpu attribute 'sgpu.ladder' (known: sgpu.ladder_layers, sgpu.twell, sgpu.tensor_map_args)}}
module attributes {sgpu.ladder = 2 : i64} {
}

// -----

module {
  // expected-error @+1 {{'sgpu.ladder_layers' is a module attribute (model option)}}
  func.func @f() attributes {sgpu.ladder_layers = 2 : i64} {
    return
  }
}
