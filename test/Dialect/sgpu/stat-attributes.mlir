// Program stats: `sgpu.stat` names a counter buffer (memref.alloc of
// memref<Nxi32> or memref<Nxi64>) that the runtime can read after a run;
// `sgpu.stat_total` is what it counts out of.
// RUN: sparse-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 1024 : i64} : memref<1xi64>
// CHECK: memref.alloc() {sgpu.stat = "rows"} : memref<1xi32>
// CHECK: memref.alloc() {sgpu.stat = "limited", sgpu.stat_limit = 5.000000e-01 : f64, sgpu.stat_total = 64 : i64} : memref<1xi64>
// CHECK: sgpu.twell_pack %{{.*}} {sgpu.twell_break_even = 0.000000e+00 : f64}
func.func @ok(%h: tensor<8x256xbf16>) {
  %a = memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 1024 : i64} : memref<1xi64>
  %b = memref.alloc() {sgpu.stat = "rows"} : memref<1xi32>
  %c = memref.alloc() {sgpu.stat = "limited", sgpu.stat_total = 64 : i64, sgpu.stat_limit = 0.5 : f64} : memref<1xi64>
  %p = sgpu.twell_pack %h {sgpu.twell_break_even = 0.0 : f64} : tensor<8x256xbf16> -> !sgpu.twell<8x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
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

// -----

func.func @limit_without_total() {
  // expected-error @+1 {{'sgpu.stat_limit' needs 'sgpu.stat_total' on the same allocation}}
  %a = memref.alloc() {sgpu.stat = "x", sgpu.stat_limit = 0.5 : f64} : memref<1xi32>
  return
}

// -----

func.func @limit_range() {
  // expected-error @+1 {{'sgpu.stat_limit' must be an f64 fraction in [0, 1], got 1.500000e+00 : f64}}
  %a = memref.alloc() {sgpu.stat = "x", sgpu.stat_total = 4 : i64, sgpu.stat_limit = 1.5 : f64} : memref<1xi32>
  return
}

// -----

func.func @break_even_elsewhere() {
  // expected-error @+1 {{'sgpu.twell_break_even' is an attribute of sgpu.twell_pack, not of 'memref.alloc'}}
  %a = memref.alloc() {sgpu.twell_break_even = 0.5 : f64} : memref<1xi32>
  return
}

// -----

// The consumer choice of sgpu-sparsify-ffn's cost model, on the pack.
// CHECK-LABEL: func @consumer_choice
// CHECK: sgpu.twell_pack %{{.*}} {sgpu.twell_consumer = "tensor-cores"}
func.func @consumer_choice(%h: tensor<8x256xbf16>) {
  %p = sgpu.twell_pack %h {sgpu.twell_consumer = "tensor-cores"} : tensor<8x256xbf16> -> !sgpu.twell<8x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return
}

// -----

func.func @consumer_unknown(%h: tensor<8x256xbf16>) {
  // expected-error @+1 {{'sgpu.twell_consumer' must be "cuda-cores" or "tensor-cores", got "tpu"}}
  %p = sgpu.twell_pack %h {sgpu.twell_consumer = "tpu"} : tensor<8x256xbf16> -> !sgpu.twell<8x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return
}

// -----

func.func @consumer_elsewhere() {
  // expected-error @+1 {{'sgpu.twell_consumer' is an attribute of sgpu.twell_pack, not of 'memref.alloc'}}
  %a = memref.alloc() {sgpu.twell_consumer = "cuda-cores"} : memref<1xi32>
  return
}

// -----

func.func @union_break_even_range(%h: tensor<8x256xbf16>) {
  // expected-error @+1 {{'sgpu.twell_union_break_even' must be an f64 fraction in [0, 1], got 2.000000e+00 : f64}}
  %p = sgpu.twell_pack %h {sgpu.twell_union_break_even = 2.0 : f64} : tensor<8x256xbf16> -> !sgpu.twell<8x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return
}

// -----

func.func @union_break_even_elsewhere() {
  // expected-error @+1 {{'sgpu.twell_union_break_even' is an attribute of sgpu.twell_pack, not of 'memref.alloc'}}
  %a = memref.alloc() {sgpu.twell_union_break_even = 0.5 : f64} : memref<1xi32>
  return
}
