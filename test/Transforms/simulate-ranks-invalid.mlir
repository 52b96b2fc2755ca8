// What sgpu-simulate-ranks cannot simulate is a diagnostic at the op or
// function.
// RUN: sparse-opt %s -split-input-file --sgpu-simulate-ranks=ranks=2 -verify-diagnostics
// Options: a group without ranks, into= without func=, a function that is
// missing or only declared, an into= target that has a body or the wrong
// type (each chunk without the named function reports that too).
// RUN: not sparse-opt %s -split-input-file --sgpu-simulate-ranks=ranks=0 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: sgpu-simulate-ranks ranks=0: a tensor-parallel group has 1 to 1024 ranks here (each is a copy of the function)
// RUN: not sparse-opt %s -split-input-file --sgpu-simulate-ranks=ranks=1000000000 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: error: sgpu-simulate-ranks ranks=1000000000: a tensor-parallel group has 1 to 1024 ranks here
// RUN: not sparse-opt %s -split-input-file --sgpu-simulate-ranks="into=x" 2>&1 | FileCheck %s --check-prefix=NOFUNC
// NOFUNC: error: sgpu-simulate-ranks into=x needs func=: the function to simulate into @x
// RUN: not sparse-opt %s -split-input-file --sgpu-simulate-ranks="func=typed into=typed_ranks2" 2>&1 | FileCheck %s --check-prefix=TYPED
// TYPED: error: sgpu-simulate-ranks func=typed: the module has no func.func @typed
// TYPED: error: sgpu-simulate-ranks into=typed_ranks2: @typed_ranks2 is declared as '(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)', but simulating @typed with 2 ranks gives '(tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)'
// RUN: not sparse-opt %s -split-input-file --sgpu-simulate-ranks="func=typed into=other" 2>&1 | FileCheck %s --check-prefix=BODY
// BODY: error: sgpu-simulate-ranks into=other: @other already has a body; give the name of a new function or of a declaration to define
// RUN: not sparse-opt %s -split-input-file --sgpu-simulate-ranks="func=typed_ranks2" 2>&1 | FileCheck %s --check-prefix=DECL
// DECL: error: sgpu-simulate-ranks func=typed_ranks2: @typed_ranks2 is only declared, there is no body to simulate

func.func @in_loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    // expected-error @+1 {{'sgpu.all_reduce' inside 'scf.for': sgpu-simulate-ranks sums each collective across the replicas of the function body, so collectives must be issued in the body itself, where every rank reaches them in the same order}}
    %n = sgpu.all_reduce %a : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @wait_in_if(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %t = sgpu.all_reduce_start %x : tensor<4xf32>
  %r = scf.if %c -> tensor<4xf32> {
    // expected-error @+1 {{'sgpu.all_reduce_wait' inside 'scf.if'}}
    %w = sgpu.all_reduce_wait %t, %x : tensor<4xf32>
    scf.yield %w : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @max(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot simulate a 'max' all-reduce: sgpu-simulate-ranks only sums the ranks' inputs (kind = #sgpu.reduce<sum>)}}
  %r = sgpu.all_reduce %x {kind = #sgpu.reduce<max>} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @avg_started(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot simulate a 'avg' all-reduce}}
  %t = sgpu.all_reduce_start %x {kind = #sgpu.reduce<avg>} : tensor<4xf32>
  %r = sgpu.all_reduce_wait %t, %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{cannot simulate ranks of @blocks: its body has 2 blocks; the body is cloned once per rank and must be a single block (simulate before lowering control flow to blocks)}}
func.func @blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  %r = sgpu.all_reduce %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @buffers(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce_call' works on buffers: simulate ranks on tensors, before bufferization}}
  %t = sgpu.all_reduce_call %x into %y : memref<4xf32>, memref<4xf32>
  sgpu.all_reduce_sync %t, %x : memref<4xf32>
  return
}

// -----

func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = sgpu.all_reduce %x : tensor<4xf32>
  return %r : tensor<4xf32>
}
// Each replica would run the helper's all-reduce alone, also through
// another call. (Every function is checked before the pass fails.)
func.func @calls_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls @helper, which issues collectives: each replica would run them alone; inline @helper before simulating ranks}}
  %r = call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @calls_indirectly(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls @calls_collective, which issues collectives}}
  %r = call @calls_collective(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The callee's signature changes (two ranks), so a per-rank call breaks.
func.func @leaf(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @calls_simulated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls @leaf, which is simulated too: its signature becomes that of all ranks, so a per-rank call no longer fits (inline it first)}}
  %r = call @leaf(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @referenced(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @takes_address() -> ((tensor<4xf32>) -> tensor<4xf32>) {
  // expected-error @+1 {{uses @referenced, whose signature sgpu-simulate-ranks changes to take every rank's arguments; simulate it into a new function instead (func=referenced into=NAME), which leaves @referenced as it is}}
  %f = func.constant @referenced : (tensor<4xf32>) -> tensor<4xf32>
  return %f : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Fine with every function simulated; the options RUNs above use it.
func.func @typed(%x: tensor<4xf32> {sgpu.replicated}, %w: tensor<4xf32>) -> tensor<4xf32> {
  %r = sgpu.all_reduce %w : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @typed_ranks2(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
