// sgpu-simulate-ranks: one function computing every rank of a
// tensor-parallel group. Arguments: rank 0's, then rank 1's, ... (a
// sgpu.replicated argument once, among rank 0's); results: every rank's, in
// rank order; each all-reduce is the sum of the replicas' inputs.
// RUN: sparse-opt %s --sgpu-simulate-ranks=ranks=2 | FileCheck %s --check-prefix=R2
// RUN: sparse-opt %s --sgpu-simulate-ranks=ranks=3 | FileCheck %s --check-prefix=R3
// RUN: sparse-opt %s --sgpu-simulate-ranks=ranks=1 | FileCheck %s --check-prefix=R1
// One function into a declaration the module already calls, or into a new
// function; the original stays as it is:
// RUN: sparse-opt %s --sgpu-simulate-ranks="ranks=2 func=tp into=tp_ranks2" | FileCheck %s --check-prefix=INTO
// RUN: sparse-opt %s --sgpu-simulate-ranks="ranks=3 func=async into=async_ranks3" | FileCheck %s --check-prefix=NEW

// R2-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// R2-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>

// The replicated %x is passed once; each rank's clone reads its own shard
// and its own copy of the constant. The all-reduce becomes one sum of both
// partial products, read by both replicas.
// R2-LABEL: func.func @tp
// R2-SAME: (%[[X:[^:]*]]: tensor<2x4xf32>, %[[W0:[^:]*]]: tensor<2x4xf32>, %[[W1:[^:]*]]: tensor<2x4xf32>)
// R2-SAME: -> (tensor<2x4xf32>, tensor<2x4xf32>)
// R2-NEXT: %[[C0:.*]] = arith.constant dense<2.0
// R2-NEXT: %[[C1:.*]] = arith.constant dense<2.0
// R2-NEXT: %[[S0:.*]] = arith.mulf %[[X]], %[[W0]]
// R2-NEXT: %[[S1:.*]] = arith.mulf %[[X]], %[[W1]]
// R2-NEXT: %[[Y0:.*]] = arith.mulf %[[S0]], %[[C0]]
// R2-NEXT: %[[Y1:.*]] = arith.mulf %[[S1]], %[[C1]]
// R2-NEXT: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// R2-NEXT: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// R2-SAME: ins(%[[Y0]], %[[Y1]] : tensor<2x4xf32>, tensor<2x4xf32>) outs(%[[E]] : tensor<2x4xf32>)
// R2-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// R2-NEXT: %[[AB:.*]] = arith.addf %[[A]], %[[B]] : f32
// R2-NEXT: linalg.yield %[[AB]] : f32
// R2: %[[Z0:.*]] = arith.addf %[[X]], %[[SUM]]
// R2-NEXT: %[[Z1:.*]] = arith.addf %[[X]], %[[SUM]]
// R2-NEXT: return %[[Z0]], %[[Z1]]

// Three ranks: one sum of three inputs, accumulated in rank order.
// R3-LABEL: func.func @tp
// R3-SAME: (%[[X:[^:]*]]: tensor<2x4xf32>, %[[W0:[^:]*]]: tensor<2x4xf32>, %[[W1:[^:]*]]: tensor<2x4xf32>, %[[W2:[^:]*]]: tensor<2x4xf32>)
// R3-SAME: -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// R3: arith.mulf %[[X]], %[[W0]]
// R3-NEXT: arith.mulf %[[X]], %[[W1]]
// R3-NEXT: arith.mulf %[[X]], %[[W2]]
// R3-NEXT: %[[Y0:.*]] = arith.mulf
// R3-NEXT: %[[Y1:.*]] = arith.mulf
// R3-NEXT: %[[Y2:.*]] = arith.mulf
// R3-NEXT: %[[E:.*]] = tensor.empty()
// R3-NEXT: %[[SUM:.*]] = linalg.generic
// R3-SAME: ins(%[[Y0]], %[[Y1]], %[[Y2]] : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// R3-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// R3-NEXT: %[[AB:.*]] = arith.addf %[[A]], %[[B]] : f32
// R3-NEXT: %[[ABC:.*]] = arith.addf %[[AB]], %[[C]] : f32
// R3-NEXT: linalg.yield %[[ABC]] : f32
// R3: %[[Z0:.*]] = arith.addf %[[X]], %[[SUM]]
// R3-NEXT: %[[Z1:.*]] = arith.addf %[[X]], %[[SUM]]
// R3-NEXT: %[[Z2:.*]] = arith.addf %[[X]], %[[SUM]]
// R3-NEXT: return %[[Z0]], %[[Z1]], %[[Z2]]

// One rank: the signature is unchanged (less the replicated marker) and
// the all-reduce is the identity.
// R1-LABEL: func.func @tp
// R1-SAME: (%[[X:[^:]*]]: tensor<2x4xf32>, %[[W:[^:]*]]: tensor<2x4xf32>) -> tensor<2x4xf32>
// R1-NEXT: %[[C:.*]] = arith.constant
// R1-NEXT: %[[S:.*]] = arith.mulf %[[X]], %[[W]]
// R1-NEXT: %[[Y:.*]] = arith.mulf %[[S]], %[[C]]
// R1-NEXT: %[[Z:.*]] = arith.addf %[[X]], %[[Y]]
// R1-NEXT: return %[[Z]]

// Into a declaration: @tp is left alone, @tp_ranks2 gets the two-rank body
// and @caller still calls it.
// INTO-LABEL: func.func @tp
// INTO-SAME: {sgpu.replicated}
// INTO: sgpu.all_reduce
// INTO-LABEL: func.func private @tp_ranks2
// INTO-SAME: (%[[X:[^:]*]]: tensor<2x4xf32>, %[[W0:[^:]*]]: tensor<2x4xf32>, %[[W1:[^:]*]]: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
// INTO: linalg.generic
// INTO-NOT: sgpu.all_reduce
// INTO: return
// INTO-LABEL: func.func @caller
// INTO-NEXT: call @tp_ranks2
func.func @tp(%x: tensor<2x4xf32> {sgpu.replicated}, %w: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c = arith.constant dense<2.0> : tensor<2x4xf32>
  %s = arith.mulf %x, %w : tensor<2x4xf32>
  %y = arith.mulf %s, %c : tensor<2x4xf32>
  %r = sgpu.all_reduce %y : tensor<2x4xf32>
  %z = arith.addf %x, %r : tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}

// A start/wait pair: the sum is taken where the collective started (the
// value it reduces), and every replica's wait result is that sum.
// R2-LABEL: func.func @async
// R2-SAME: (%[[A0:[^:]*]]: tensor<4xbf16>, %[[B0:[^:]*]]: tensor<4xbf16>, %[[A1:[^:]*]]: tensor<4xbf16>, %[[B1:[^:]*]]: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>)
// R2-NEXT: %[[E:.*]] = tensor.empty() : tensor<4xbf16>
// R2-NEXT: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]], #[[ID1]]], iterator_types = ["parallel"]}
// R2-SAME: ins(%[[A0]], %[[A1]] : tensor<4xbf16>, tensor<4xbf16>)
// R2: arith.addf %{{.*}}, %{{.*}} : bf16
// R2: %[[M0:.*]] = arith.mulf %[[B0]], %[[B0]]
// R2-NEXT: %[[M1:.*]] = arith.mulf %[[B1]], %[[B1]]
// R2-NEXT: %[[S0:.*]] = arith.addf %[[SUM]], %[[M0]]
// R2-NEXT: %[[S1:.*]] = arith.addf %[[SUM]], %[[M1]]
// R2-NEXT: return %[[S0]], %[[S1]]
// R2-NOT: sgpu.all_reduce

// R1-LABEL: func.func @async
// R1-SAME: (%[[A:[^:]*]]: tensor<4xbf16>, %[[B:[^:]*]]: tensor<4xbf16>) -> tensor<4xbf16>
// R1-NEXT: %[[M:.*]] = arith.mulf %[[B]], %[[B]]
// R1-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[M]]
// R1-NEXT: return %[[S]]

// Into a new function, placed after the original, which keeps its pair.
// NEW-LABEL: func.func @async(
// NEW: sgpu.all_reduce_start
// NEW: sgpu.all_reduce_wait
// NEW-LABEL: func.func @async_ranks3
// NEW-SAME: (%[[A0:[^:]*]]: tensor<4xbf16>, %{{[^:]*}}: tensor<4xbf16>, %[[A1:[^:]*]]: tensor<4xbf16>, %{{[^:]*}}: tensor<4xbf16>, %[[A2:[^:]*]]: tensor<4xbf16>, %{{[^:]*}}: tensor<4xbf16>)
// NEW-SAME: -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
// NEW: linalg.generic
// NEW-SAME: ins(%[[A0]], %[[A1]], %[[A2]] :
// NEW-NOT: sgpu.all_reduce
// NEW: return
func.func @async(%a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  %t = sgpu.all_reduce_start %a : tensor<4xbf16>
  %m = arith.mulf %b, %b : tensor<4xbf16>
  %r = sgpu.all_reduce_wait %t, %a : tensor<4xbf16>
  %s = arith.addf %r, %m : tensor<4xbf16>
  return %s : tensor<4xbf16>
}

// Several results: rank 0's results, then rank 1's; the other argument and
// result attributes are kept on every copy.
// R2-LABEL: func.func @results
// R2-SAME: (%[[X:[^:]*]]: tensor<4xf32> {test.note = "x"}, %[[Y0:[^:]*]]: tensor<4xf32> {test.note = "y"}, %[[Y1:[^:]*]]: tensor<4xf32> {test.note = "y"})
// R2-SAME: -> (tensor<4xf32> {test.out = 0 : i32}, tensor<4xf32>, tensor<4xf32> {test.out = 0 : i32}, tensor<4xf32>)
// R2-NEXT: %[[S0:.*]] = arith.addf %[[X]], %[[Y0]]
// R2-NEXT: %[[S1:.*]] = arith.addf %[[X]], %[[Y1]]
// R2-NEXT: return %[[S0]], %[[Y0]], %[[S1]], %[[Y1]]
// R1-LABEL: func.func @results
// R1-SAME: (%{{[^:]*}}: tensor<4xf32> {test.note = "x"}, %{{[^:]*}}: tensor<4xf32> {test.note = "y"})
func.func @results(%x: tensor<4xf32> {sgpu.replicated, test.note = "x"}, %y: tensor<4xf32> {test.note = "y"})
    -> (tensor<4xf32> {test.out = 0 : i32}, tensor<4xf32>) {
  %s = arith.addf %x, %y : tensor<4xf32>
  return %s, %y : tensor<4xf32>, tensor<4xf32>
}

// Regions without collectives are cloned with the rest, each reading its
// rank's values.
// R2-LABEL: func.func @nested
// R2-SAME: (%[[X0:[^:]*]]: tensor<4xf32>, %[[N0:[^:]*]]: index, %[[X1:[^:]*]]: tensor<4xf32>, %[[N1:[^:]*]]: index)
// R2: %[[F0:.*]] = scf.for %{{.*}} to %[[N0]] {{.*}} iter_args(%[[A0:.*]] = %[[X0]])
// R2-NEXT: arith.addf %[[A0]], %[[X0]]
// R2: %[[F1:.*]] = scf.for %{{.*}} to %[[N1]] {{.*}} iter_args(%[[A1:.*]] = %[[X1]])
// R2-NEXT: arith.addf %[[A1]], %[[X1]]
// R2: %[[SUM:.*]] = linalg.generic
// R2-SAME: ins(%[[F0]], %[[F1]] :
// R2: return %[[SUM]], %[[SUM]]
func.func @nested(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %d = arith.addf %a, %x : tensor<4xf32>
    scf.yield %d : tensor<4xf32>
  }
  %r = sgpu.all_reduce %acc : tensor<4xf32>
  return %r : tensor<4xf32>
}

// A declaration is not simulated.
// R2: func.func private @tp_ranks2(tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
func.func private @tp_ranks2(tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)

// A driver that calls the two-rank @tp through its declaration (with every
// function simulated, it is simulated too).
func.func @caller(%x: tensor<2x4xf32>, %w0: tensor<2x4xf32>, %w1: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a, %b = call @tp_ranks2(%x, %w0, %w1) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return %a : tensor<2x4xf32>
}
