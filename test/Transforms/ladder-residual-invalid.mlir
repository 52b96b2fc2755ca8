// Chains sgpu-ladder-residual does not recognize are diagnostics.
// RUN: sparse-opt %s -split-input-file --sgpu-ladder-residual -verify-diagnostics
// RUN: not sparse-opt %s -split-input-file --sgpu-ladder-residual="layers=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: sgpu-ladder-residual layers=-1 is negative; expected 0 (the module's sgpu.ladder_layers, or all) or a layer count

func.func @returned(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{not a residual block: the all-reduce's result is not added to the residual stream alone (x = x + all_reduce(block(norm(x))))}}
  %r = sgpu.all_reduce %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @no_norm(%x: tensor<2x8xf32>, %s: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{not a pre-norm residual block: 'arith.mulf' reads the residual stream directly (the ladder form needs every block to read it through a norm)}}
  %f = arith.mulf %x, %s : tensor<2x8xf32>
  %r = sgpu.all_reduce %f : tensor<2x8xf32>
  %y = arith.addf %x, %r : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @broken_chain(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>, %w: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %n0 = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %r0 = sgpu.all_reduce %n0 : tensor<2x8xf32>
  %x1 = arith.addf %x, %r0 : tensor<2x8xf32>
  %n1 = sgpu.rms_norm %z, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %r1 = sgpu.all_reduce %n1 : tensor<2x8xf32>
  // expected-error @+1 {{residual add does not continue the chain: its stream operand is not the previous residual sum}}
  %z1 = arith.addf %z, %r1 : tensor<2x8xf32>
  return %x1, %z1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

module attributes {sgpu.ladder_layers = 1 : i64} {
func.func @odd_layers(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  %n0 = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %r0 = sgpu.all_reduce %n0 : tensor<2x8xf32>
  // expected-error @+1 {{layers=1 needs attention/MLP pairs, but the residual chain has 3 blocks}}
  %x1 = arith.addf %x, %r0 : tensor<2x8xf32>
  %n1 = sgpu.rms_norm %x1, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %r1 = sgpu.all_reduce %n1 : tensor<2x8xf32>
  %x2 = arith.addf %x1, %r1 : tensor<2x8xf32>
  %n2 = sgpu.rms_norm %x2, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %r2 = sgpu.all_reduce %n2 : tensor<2x8xf32>
  %x3 = arith.addf %x2, %r2 : tensor<2x8xf32>
  return %x3 : tensor<2x8xf32>
}
}

// -----

// expected-error @+1 {{sgpu-ladder-residual found no tensor-parallel residual chain (x = x + all_reduce(block(norm(x)))): the module has no sgpu.all_reduce}}
module {
  func.func @dense(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
