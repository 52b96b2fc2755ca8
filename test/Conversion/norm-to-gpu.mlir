// sgpu.rms_norm and sgpu.layer_norm become generated kernels with one block
// per row: f32 sums, a shuffle reduction inside each warp and through shared
// memory across warps, then the reference formula per column. Rows whose
// bytes are a multiple of 16 (and at most 8 chunks of 16 bytes per thread)
// are read once into registers in 16-byte vectors; others take strided
// loops over the row.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// The strided form: 16 rows of 100 f16 features (200 bytes, not a multiple
// of 16): 128 threads (4 warps, one column or none each).
// CHECK-LABEL: func.func @rms_f16
// CHECK-SAME: (%[[X:.*]]: tensor<16x100xf16>, %[[W:.*]]: tensor<100xf16>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16x100xf16>
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<16x100xf16> to memref<16x100xf16>
// CHECK: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only : tensor<100xf16> to memref<100xf16>
// CHECK: %[[ROWS:.*]] = arith.constant 16 : index
// CHECK: %[[T:.*]] = arith.constant 128 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_0 blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%[[XB]] : memref<16x100xf16>, %[[WB]] : memref<100xf16>, %[[Y]] : memref<16x100xf16>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[Y]] restrict writable
// CHECK: return %[[R]]
// CHECK: gpu.module @sgpu_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx85">]
// CHECK: gpu.func @sgpu_rms_norm_0(%[[KX:.*]]: memref<16x100xf16>, %[[KW:.*]]: memref<100xf16>, %[[KY:.*]]: memref<16x100xf16>)
// CHECK-SAME: workgroup(%[[SMEM:.*]] : memref<4xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %{{.*}} : index
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %{{.*}} : index
// CHECK: %[[N:.*]] = arith.constant 1.000000e+02 : f32
// Each thread: the sum of squares of columns tid, tid + 128, ... in f32.
// CHECK: %[[SQ:.*]] = scf.for %[[J:.*]] = %[[TID]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[XV:.*]] = memref.load %[[KX]][%[[ROW]], %[[J]]] : memref<16x100xf16>
// CHECK: %[[XF:.*]] = arith.extf %[[XV]] : f16 to f32
// CHECK: %[[XX:.*]] = arith.mulf %[[XF]], %[[XF]] : f32
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[XX]] : f32
// CHECK: scf.yield %[[NEXT]] : f32
// The warp sum: xor butterfly over offsets 16, 8, 4, 2, 1.
// CHECK: %[[O16:.*]] = arith.constant 16 : i32
// CHECK: %[[WIDTH:.*]] = arith.constant 32 : i32
// CHECK: %[[S16:.*]], %{{.*}} = gpu.shuffle xor %[[SQ]], %[[O16]], %[[WIDTH]] : f32
// CHECK: %[[A16:.*]] = arith.addf %[[SQ]], %[[S16]] : f32
// CHECK: arith.constant 8 : i32
// CHECK: gpu.shuffle xor %[[A16]]
// CHECK: arith.constant 4 : i32
// CHECK: gpu.shuffle xor
// CHECK: arith.constant 2 : i32
// CHECK: gpu.shuffle xor
// CHECK: arith.constant 1 : i32
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle xor
// CHECK: %[[WSUM:.*]] = arith.addf %{{.*}}, %[[S1]] : f32
// Lane 0 of each warp publishes the warp's sum; after the barrier every
// warp reduces the 4 warp sums (lanes 4..31 add zeros).
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %[[WSUM]], %[[SMEM]][%[[WARP]]] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[HAS:.*]] = arith.cmpi ult, %[[LANE]], %[[C4]] : index
// CHECK: %[[SLOT:.*]] = arith.select %[[HAS]], %[[LANE]], %{{.*}} : index
// CHECK: %[[P:.*]] = memref.load %[[SMEM]][%[[SLOT]]] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK: %[[PZ:.*]] = arith.select %[[HAS]], %[[P]], %{{.*}} : f32
// CHECK: gpu.shuffle xor %[[PZ]]
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK: %[[TOTAL:.*]] = arith.addf
// mean of squares + eps; rsqrt as 1 / sqrt, both correctly rounded (as the
// CPU reference's math.rsqrt lowers; no libdevice call).
// CHECK: %[[MS:.*]] = arith.divf %[[TOTAL]], %[[N]] : f32
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[V:.*]] = arith.addf %[[MS]], %[[EPS]] : f32
// CHECK: %[[ROOT:.*]] = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%[[V]]) : (f32) -> f32
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[INV:.*]] = arith.divf %[[ONE]], %[[ROOT]] : f32
// y = x * inv * w, rounded once to f16.
// CHECK: scf.for %[[J2:.*]] = %[[TID]] to %{{.*}} step %{{.*}} {
// CHECK: %[[X2:.*]] = memref.load %[[KX]][%[[ROW]], %[[J2]]] : memref<16x100xf16>
// CHECK: %[[X2F:.*]] = arith.extf %[[X2]] : f16 to f32
// CHECK: %[[XS:.*]] = arith.mulf %[[X2F]], %[[INV]] : f32
// CHECK: %[[WV:.*]] = memref.load %[[KW]][%[[J2]]] : memref<100xf16>
// CHECK: %[[WF:.*]] = arith.extf %[[WV]] : f16 to f32
// CHECK: %[[YV:.*]] = arith.mulf %[[XS]], %[[WF]] : f32
// CHECK: %[[YH:.*]] = arith.truncf %[[YV]] : f32 to f16
// CHECK: memref.store %[[YH]], %[[KY]][%[[ROW]], %[[J2]]] : memref<16x100xf16>
// CHECK: gpu.return
func.func @rms_f16(%x: tensor<16x100xf16>, %w: tensor<100xf16>) -> tensor<16x100xf16> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<16x100xf16>, tensor<100xf16> -> tensor<16x100xf16>
  return %y : tensor<16x100xf16>
}

// -----

// The register-resident form with a ragged end: rank 3, bf16, D = 40 (80
// bytes, 5 chunks of 8): the host views the buffers as 6 rows x 40 and
// launches 6 blocks of one warp. Lanes 5..31 have no chunk: their load
// address is clamped to column 0, their partial sums are replaced by 0 and
// their store is skipped. One warp: the shuffles are the whole reduction.
// CHECK-LABEL: func.func @layer_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x40xbf16>, %[[W:.*]]: tensor<40xbf16>, %[[B:.*]]: tensor<40xbf16>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<2x3x40xbf16>
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[X2D:.*]] = memref.collapse_shape %[[XB]] {{\[\[}}0, 1], [2]] : memref<2x3x40xbf16> into memref<6x40xbf16>
// CHECK: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only
// CHECK: %[[BB:.*]] = bufferization.to_buffer %[[B]] read_only
// CHECK: %[[Y2D:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1], [2]] : memref<2x3x40xbf16> into memref<6x40xbf16>
// CHECK: %[[ROWS:.*]] = arith.constant 6 : index
// CHECK: %[[T:.*]] = arith.constant 32 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_layer_norm_0 blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%[[X2D]] : memref<6x40xbf16>, %[[WB]] : memref<40xbf16>, %[[BB]] : memref<40xbf16>, %[[Y2D]] : memref<6x40xbf16>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<2x3x40xbf16> to tensor<2x3x40xbf16>
// CHECK: return %[[R]]
// CHECK: gpu.func @sgpu_layer_norm_0(%[[KX:.*]]: memref<6x40xbf16>, %[[KW:.*]]: memref<40xbf16>, %[[KB:.*]]: memref<40xbf16>, %[[KY:.*]]: memref<6x40xbf16>) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: %[[C5:.*]] = arith.constant 5 : index
// CHECK: %[[HAS:.*]] = arith.cmpi ult, %[[TID]], %[[C5]] : index
// CHECK: %[[SLOT:.*]] = arith.select %[[HAS]], %[[TID]], %{{.*}} : index
// CHECK: %[[COL:.*]] = arith.muli %[[SLOT]], %{{.*}} : index
// x, w and b: one 16-byte load each, all before any arithmetic.
// CHECK: %[[XV:.*]] = vector.load %[[KX]][%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<6x40xbf16>, vector<8xbf16>
// CHECK: %[[X0:.*]] = vector.extract %[[XV]][0] : bf16 from vector<8xbf16>
// CHECK: %[[X0F:.*]] = arith.extf %[[X0]] : bf16 to f32
// CHECK: %[[WV:.*]] = vector.load %[[KW]][%[[COL]]] {alignment = 16 : i64} : memref<40xbf16>, vector<8xbf16>
// CHECK: %[[W0:.*]] = vector.extract %[[WV]][0]
// CHECK: %[[W0F:.*]] = arith.extf %[[W0]] : bf16 to f32
// CHECK: %[[BV:.*]] = vector.load %[[KB]][%[[COL]]] {alignment = 16 : i64} : memref<40xbf16>, vector<8xbf16>
// CHECK: %[[B0:.*]] = vector.extract %[[BV]][0]
// CHECK: %[[B0F:.*]] = arith.extf %[[B0]] : bf16 to f32
// CHECK-NOT: vector.load
// Pass 1: sum(x) over the chunk, 0 for a lane without one.
// CHECK: %[[N:.*]] = arith.constant 4.000000e+01 : f32
// CHECK: %[[S1:.*]] = arith.addf %[[X0F]], %{{.*}} : f32
// CHECK-NOT: arith.mulf
// CHECK: %[[S1M:.*]] = arith.select %[[HAS]], %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: %[[MU:.*]] = arith.divf %{{.*}}, %[[N]] : f32
// Pass 2: sum((x - mu)^2) from the same registers.
// CHECK: %[[D0:.*]] = arith.subf %[[X0F]], %[[MU]] : f32
// CHECK: arith.mulf %[[D0]], %[[D0]] : f32
// CHECK: arith.select %[[HAS]]
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[VAR:.*]] = arith.divf %{{.*}}, %[[N]] : f32
// CHECK: %[[VE:.*]] = arith.addf %[[VAR]], %{{.*}} : f32
// CHECK: %[[ROOT:.*]] = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%[[VE]]) : (f32) -> f32
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[ROOT]] : f32
// y = (x - mu) * inv * w + b, stored as one vector by the lanes that have a chunk.
// CHECK: %[[C0:.*]] = arith.subf %[[X0F]], %[[MU]] : f32
// CHECK: %[[NORM:.*]] = arith.mulf %[[C0]], %[[INV]] : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[NORM]], %[[W0F]] : f32
// CHECK: %[[OUT:.*]] = arith.addf %[[SCALED]], %[[B0F]] : f32
// CHECK: scf.if %[[HAS]] {
// CHECK: %[[OUTB:.*]] = arith.truncf %[[OUT]] : f32 to bf16
// CHECK: %[[YV:.*]] = vector.from_elements %[[OUTB]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<8xbf16>
// CHECK: vector.store %[[YV]], %[[KY]][%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<6x40xbf16>, vector<8xbf16>
// CHECK: }
// CHECK-NEXT: gpu.return
func.func @layer_bf16(%x: tensor<2x3x40xbf16>, %w: tensor<40xbf16>, %b: tensor<40xbf16>) -> tensor<2x3x40xbf16> {
  %y = sgpu.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f32} : tensor<2x3x40xbf16>, tensor<40xbf16>, tensor<40xbf16> -> tensor<2x3x40xbf16>
  return %y : tensor<2x3x40xbf16>
}

// -----

// One f32 row of 16 (four chunks of 4): one warp, so the warp shuffles are
// the whole reduction (no shared memory, no barrier), and nothing is
// rounded.
// CHECK-LABEL: func.func @rms_f32_row
// CHECK: %[[XB:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<16xf32> to memref<16xf32>
// CHECK: %[[X2D:.*]] = memref.expand_shape %[[XB]] {{\[\[}}0, 1]] output_shape [1, 16] : memref<16xf32> into memref<1x16xf32>
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[T:.*]] = arith.constant 32 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_0 blocks in (%[[ONE]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%[[X2D]] : memref<1x16xf32>
// CHECK: gpu.func @sgpu_rms_norm_0(%{{.*}}: memref<1x16xf32>, %{{.*}}: memref<16xf32>, %{{.*}}: memref<1x16xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
// CHECK-NOT: workgroup
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK-NOT: arith.truncf
// CHECK: gpu.return
func.func @rms_f32_row(%x: tensor<16xf32>, %w: tensor<16xf32>) -> tensor<16xf32> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// Wide rows (D = 4096, the decode step's norm): 256 threads, two chunks of
// 8 each, at columns 8 t and 8 (t + 256); no loop, no guard. Several norms
// get one kernel each, numbered per op, and a norm reads another's result.
// CHECK-LABEL: func.func @several
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_0
// CHECK: %[[LN:.*]] = memref.alloc() : memref<4x4096xf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_layer_norm_0 {{.*}} args({{.*}}, %[[LN]] : memref<4x4096xf16>)
// CHECK: %[[LNT:.*]] = bufferization.to_tensor %[[LN]]
// CHECK: bufferization.to_buffer %[[LNT]] read_only
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_1
// CHECK: gpu.func @sgpu_rms_norm_0(%[[KX:.*]]: memref<4x4096xf16>, %[[KW:.*]]: memref<4096xf16>, %[[KY:.*]]: memref<4x4096xf16>) workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK-NOT: scf.for
// CHECK: %[[COL0:.*]] = arith.muli %[[TID]], %{{.*}} : index
// CHECK: vector.load %[[KX]][%[[ROW]], %[[COL0]]] {alignment = 16 : i64} : memref<4x4096xf16>, vector<8xf16>
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[SLOT1:.*]] = arith.addi %[[TID]], %[[C256]] : index
// CHECK: %[[COL1:.*]] = arith.muli %[[SLOT1]], %{{.*}} : index
// CHECK: vector.load %[[KX]][%[[ROW]], %[[COL1]]]
// CHECK: vector.load %[[KW]][%[[COL0]]]
// CHECK: vector.load %[[KW]][%[[COL1]]]
// CHECK-NOT: arith.select
// CHECK: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK-NOT: scf.if
// CHECK: vector.store %{{.*}}, %[[KY]][%[[ROW]], %[[COL0]]]
// CHECK-NOT: scf.if
// CHECK: vector.store %{{.*}}, %[[KY]][%[[ROW]], %[[COL1]]]
// CHECK-NEXT: gpu.return
// CHECK: gpu.func @sgpu_layer_norm_0({{.*}}) workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.func @sgpu_rms_norm_1
func.func @several(%x: tensor<4x4096xf16>, %w: tensor<4096xf16>, %b: tensor<4096xf16>) -> (tensor<4x4096xf16>, tensor<4x4096xf16>) {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<4x4096xf16>, tensor<4096xf16> -> tensor<4x4096xf16>
  %z = sgpu.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f32} : tensor<4x4096xf16>, tensor<4096xf16>, tensor<4096xf16> -> tensor<4x4096xf16>
  %u = sgpu.rms_norm %z, %w {epsilon = 1.0e-05 : f32} : tensor<4x4096xf16>, tensor<4096xf16> -> tensor<4x4096xf16>
  return %y, %u : tensor<4x4096xf16>, tensor<4x4096xf16>
}

// -----

// A row too wide for the registers (D = 32768 bf16: 16 chunks per thread at
// 256 threads, over the limit of 8) takes the strided form.
// CHECK-LABEL: func.func @too_wide
// CHECK: gpu.func @sgpu_rms_norm_0({{.*}}) workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-NOT: vector.load
// CHECK: %[[D:.*]] = arith.constant 32768 : index
// CHECK: %[[STEP:.*]] = arith.constant 256 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[D]] step %[[STEP]]
// CHECK: memref.load
// CHECK-NOT: vector.
// CHECK: gpu.return
func.func @too_wide(%x: tensor<2x32768xbf16>, %w: tensor<32768xbf16>) -> tensor<2x32768xbf16> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<2x32768xbf16>, tensor<32768xbf16> -> tensor<2x32768xbf16>
  return %y : tensor<2x32768xbf16>
}

// -----

// sgpu.add_rms_norm (the residual stream's add fused into the norm): one
// kernel with the residual after x and the sum before y. Register-resident:
// x's chunks and the residual's are all loaded before the adds; each sum
// is rounded to bf16 (truncf, extf) and stored (16 bytes) before the
// reduction reads it.
// CHECK-LABEL: func.func @add_rms
// CHECK: %[[S:.*]] = memref.alloc() : memref<2x1x4096xbf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_add_rms_norm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})  args(%{{.*}} : memref<2x4096xbf16>, %{{.*}} : memref<2x4096xbf16>, %{{.*}} : memref<4096xbf16>, %{{.*}} : memref<2x4096xbf16>, %{{.*}} : memref<2x4096xbf16>)
// CHECK: gpu.func @sgpu_add_rms_norm_0(%[[X:.*]]: memref<2x4096xbf16>, %[[R:.*]]: memref<2x4096xbf16>, %[[W:.*]]: memref<4096xbf16>, %[[SUM:.*]]: memref<2x4096xbf16>, %[[Y:.*]]: memref<2x4096xbf16>)
// CHECK: vector.load %[[X]]
// CHECK: vector.load %[[X]]
// CHECK: vector.load %[[R]]
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: vector.store %{{.*}}, %[[SUM]]
// CHECK: gpu.shuffle xor
// CHECK: vector.store %{{.*}}, %[[Y]]
// CHECK: gpu.return
func.func @add_rms(%x: tensor<2x1x4096xbf16>, %r: tensor<2x1x4096xbf16>, %w: tensor<4096xbf16>) -> (tensor<2x1x4096xbf16>, tensor<2x1x4096xbf16>) {
  %s, %y = sgpu.add_rms_norm %x, %r, %w {epsilon = 1.0e-05 : f32} : tensor<2x1x4096xbf16>, tensor<2x1x4096xbf16>, tensor<4096xbf16> -> tensor<2x1x4096xbf16>, tensor<2x1x4096xbf16>
  return %s, %y : tensor<2x1x4096xbf16>, tensor<2x1x4096xbf16>
}

// -----

// The strided form (D = 32768) adds the residual at every read of the row
// and writes the sum in the last pass, beside y.
// CHECK-LABEL: func.func @add_rms_wide
// CHECK: gpu.func @sgpu_add_rms_norm_0(%[[X:.*]]: memref<1x32768xbf16>, %[[R:.*]]: memref<1x32768xbf16>, %{{.*}}: memref<32768xbf16>, %[[SUM:.*]]: memref<1x32768xbf16>, %[[Y:.*]]: memref<1x32768xbf16>)
// CHECK: scf.for
// CHECK: memref.load %[[R]]
// CHECK: scf.for
// CHECK: memref.load %[[R]]
// CHECK: memref.store %{{.*}}, %[[SUM]]
// CHECK: memref.store %{{.*}}, %[[Y]]
func.func @add_rms_wide(%x: tensor<1x32768xbf16>, %r: tensor<1x32768xbf16>, %w: tensor<32768xbf16>) -> (tensor<1x32768xbf16>, tensor<1x32768xbf16>) {
  %s, %y = sgpu.add_rms_norm %x, %r, %w {epsilon = 1.0e-05 : f32} : tensor<1x32768xbf16>, tensor<1x32768xbf16>, tensor<32768xbf16> -> tensor<1x32768xbf16>, tensor<1x32768xbf16>
  return %s, %y : tensor<1x32768xbf16>, tensor<1x32768xbf16>
}
