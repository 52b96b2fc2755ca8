// The collective order is checked: every rank must reach each all-reduce.
// RUN: sparse-opt %s -split-input-file --sgpu-async-collectives -verify-diagnostics

func.func @conditional(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    // expected-error @+1 {{sgpu.all_reduce inside 'scf.if': collectives must be issued unconditionally in the body of their function, so that every rank issues the same collectives in the same order}}
    %a = sgpu.all_reduce %x : tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @in_loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    // expected-error @+1 {{sgpu.all_reduce inside 'scf.for': collectives must be issued unconditionally in the body of their function, so that every rank issues the same collectives in the same order}}
    %n = sgpu.all_reduce %a : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
