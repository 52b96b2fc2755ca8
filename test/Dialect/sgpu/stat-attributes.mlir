// Program stats: `sgpu.stat` names a counter buffer (memref.alloc of
// memref<Nxi32> or memref<Nxi64>) that the runtime can read after a run;
// `sgpu.stat_total` is what it counts out of.
// RUN: sparse-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 1024 : i64} : memref<1xi64>
// CHECK: memref.alloc() {sgpu.stat = "rows"} : memref<1xi32>
func.func @ok() {
  %a = memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 1024 : i64} : memref<1xi64>
  %b = memref.alloc() {sgpu.stat = "rows"} : memref<1xi32>
  return
}

// -----

func.func @float_counter() {
  // expected-error @+1 {{'sgpu.stat' marks a program stat: an attribute of a memref.alloc of memref<Nxi32> or memref<Nxi64>}}
  %a = memref.alloc() {sgpu.stat = "x"} : memref<1xf32>
  return
}

// -----

func.func @not_an_alloc(%m: memref<1xi32>, %c: i32, %i: index) {
  // expected-error @+1 {{'sgpu.stat' marks a program stat: an attribute of a memref.alloc of memref<Nxi32> or memref<Nxi64>}}
  memref.store %c, %m[%i] {sgpu.stat = "x"} : memref<1xi32>
  return
}

// -----

func.func @bad_name() {
  // expected-error @+1 {{'sgpu.stat' must be a name of letters, digits, '_' and '.', got "a b"}}
  %a = memref.alloc() {sgpu.stat = "a b"} : memref<1xi32>
  return
}

// -----

func.func @total_alone() {
  // expected-error @+1 {{'sgpu.stat_total' needs 'sgpu.stat' on the same allocation}}
  %a = memref.alloc() {sgpu.stat_total = 4 : i64} : memref<1xi32>
  return
}

// -----

func.func @total_zero() {
  // expected-error @+1 {{'sgpu.stat_total' must be a positive integer, got 0 : i64}}
  %a = memref.alloc() {sgpu.stat = "x", sgpu.stat_total = 0 : i64} : memref<1xi32>
  return
}
