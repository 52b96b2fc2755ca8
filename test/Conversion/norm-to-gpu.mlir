// sgpu.rms_norm and sgpu.layer_norm become generated kernels with one block
// per row: strided f32 column sums, a shuffle reduction inside each warp and
// through shared memory across warps, then the reference formula per column.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// 16 rows of 256 f16 features: 256 threads (8 warps, one column each).
// CHECK-LABEL: func.func @rms_f16
// CHECK-SAME: (%[[X:.*]]: tensor<16x256xf16>, %[[W:.*]]: tensor<256xf16>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16x256xf16>
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<16x256xf16> to memref<16x256xf16>
// CHECK: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only : tensor<256xf16> to memref<256xf16>
// CHECK: %[[ROWS:.*]] = arith.constant 16 : index
// CHECK: %[[T:.*]] = arith.constant 256 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_0 blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%[[XB]] : memref<16x256xf16>, %[[WB]] : memref<256xf16>, %[[Y]] : memref<16x256xf16>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[Y]] restrict writable
// CHECK: return %[[R]]
// CHECK: gpu.module @sgpu_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx85">]
// CHECK: gpu.func @sgpu_rms_norm_0(%[[KX:.*]]: memref<16x256xf16>, %[[KW:.*]]: memref<256xf16>, %[[KY:.*]]: memref<16x256xf16>)
// CHECK-SAME: workgroup(%[[SMEM:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %{{.*}} : index
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %{{.*}} : index
// CHECK: %[[N:.*]] = arith.constant 2.560000e+02 : f32
// Each thread: the sum of squares of columns tid, tid + 256, ... in f32.
// CHECK: %[[SQ:.*]] = scf.for %[[J:.*]] = %[[TID]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[XV:.*]] = memref.load %[[KX]][%[[ROW]], %[[J]]] : memref<16x256xf16>
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
// warp reduces the 8 warp sums (lanes 8..31 add zeros).
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %[[WSUM]], %[[SMEM]][%[[WARP]]] : memref<8xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[HAS:.*]] = arith.cmpi ult, %[[LANE]], %[[C8]] : index
// CHECK: %[[SLOT:.*]] = arith.select %[[HAS]], %[[LANE]], %{{.*}} : index
// CHECK: %[[P:.*]] = memref.load %[[SMEM]][%[[SLOT]]] : memref<8xf32, #gpu.address_space<workgroup>>
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
// CHECK: %[[X2:.*]] = memref.load %[[KX]][%[[ROW]], %[[J2]]] : memref<16x256xf16>
// CHECK: %[[X2F:.*]] = arith.extf %[[X2]] : f16 to f32
// CHECK: %[[XS:.*]] = arith.mulf %[[X2F]], %[[INV]] : f32
// CHECK: %[[WV:.*]] = memref.load %[[KW]][%[[J2]]] : memref<256xf16>
// CHECK: %[[WF:.*]] = arith.extf %[[WV]] : f16 to f32
// CHECK: %[[YV:.*]] = arith.mulf %[[XS]], %[[WF]] : f32
// CHECK: %[[YH:.*]] = arith.truncf %[[YV]] : f32 to f16
// CHECK: memref.store %[[YH]], %[[KY]][%[[ROW]], %[[J2]]] : memref<16x256xf16>
// CHECK: gpu.return
func.func @rms_f16(%x: tensor<16x256xf16>, %w: tensor<256xf16>) -> tensor<16x256xf16> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<16x256xf16>, tensor<256xf16> -> tensor<16x256xf16>
  return %y : tensor<16x256xf16>
}

// -----

// Rank 3, bf16, D = 40: the host views the buffers as 6 rows x 40 and
// launches 6 blocks of 64 threads (the two warps that have a column). Two
// reductions (mean, then the squared deviations), each in its own two words
// of shared memory.
// CHECK-LABEL: func.func @layer_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x40xbf16>, %[[W:.*]]: tensor<40xbf16>, %[[B:.*]]: tensor<40xbf16>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<2x3x40xbf16>
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[X2D:.*]] = memref.collapse_shape %[[XB]] {{\[\[}}0, 1], [2]] : memref<2x3x40xbf16> into memref<6x40xbf16>
// CHECK: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only
// CHECK: %[[BB:.*]] = bufferization.to_buffer %[[B]] read_only
// CHECK: %[[Y2D:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1], [2]] : memref<2x3x40xbf16> into memref<6x40xbf16>
// CHECK: %[[ROWS:.*]] = arith.constant 6 : index
// CHECK: %[[T:.*]] = arith.constant 64 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_layer_norm_0 blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%[[X2D]] : memref<6x40xbf16>, %[[WB]] : memref<40xbf16>, %[[BB]] : memref<40xbf16>, %[[Y2D]] : memref<6x40xbf16>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<2x3x40xbf16> to tensor<2x3x40xbf16>
// CHECK: return %[[R]]
// CHECK: gpu.func @sgpu_layer_norm_0(%[[KX:.*]]: memref<6x40xbf16>, %[[KW:.*]]: memref<40xbf16>, %[[KB:.*]]: memref<40xbf16>, %[[KY:.*]]: memref<6x40xbf16>)
// CHECK-SAME: workgroup(%[[SMEM:.*]] : memref<4xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>
// CHECK: %[[N:.*]] = arith.constant 4.000000e+01 : f32
// Pass 1: sum(x).
// CHECK: %[[S:.*]] = scf.for
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK-NOT: arith.mulf
// CHECK: scf.yield
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[SMEM]][%{{.*}}] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[MU:.*]] = arith.divf %{{.*}}, %[[N]] : f32
// Pass 2: sum((x - mu)^2), in words 2 and 3.
// CHECK: scf.for
// CHECK: %[[XF:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[C:.*]] = arith.subf %[[XF]], %[[MU]] : f32
// CHECK: %[[CC:.*]] = arith.mulf %[[C]], %[[C]] : f32
// CHECK: arith.addf %{{.*}}, %[[CC]] : f32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: scf.if
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[SLOT:.*]] = arith.addi %{{.*}}, %[[C2]] : index
// CHECK: memref.store %{{.*}}, %[[SMEM]][%[[SLOT]]]
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[VAR:.*]] = arith.divf %{{.*}}, %[[N]] : f32
// CHECK: %[[VE:.*]] = arith.addf %[[VAR]], %{{.*}} : f32
// CHECK: %[[ROOT:.*]] = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%[[VE]]) : (f32) -> f32
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[ROOT]] : f32
// y = (x - mu) * inv * w + b.
// CHECK: scf.for
// CHECK: %[[XF2:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[C2:.*]] = arith.subf %[[XF2]], %[[MU]] : f32
// CHECK: %[[NORM:.*]] = arith.mulf %[[C2]], %[[INV]] : f32
// CHECK: memref.load %[[KW]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[NORM]], %{{.*}} : f32
// CHECK: memref.load %[[KB]]
// CHECK: %[[BF:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[OUT:.*]] = arith.addf %[[SCALED]], %[[BF]] : f32
// CHECK: %[[OUTB:.*]] = arith.truncf %[[OUT]] : f32 to bf16
// CHECK: memref.store %[[OUTB]], %[[KY]]
func.func @layer_bf16(%x: tensor<2x3x40xbf16>, %w: tensor<40xbf16>, %b: tensor<40xbf16>) -> tensor<2x3x40xbf16> {
  %y = sgpu.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f32} : tensor<2x3x40xbf16>, tensor<40xbf16>, tensor<40xbf16> -> tensor<2x3x40xbf16>
  return %y : tensor<2x3x40xbf16>
}

// -----

// One f32 row of 16: one warp, so the warp shuffles are the whole
// reduction (no shared memory, no barrier), and nothing is rounded.
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

// Wide rows (D = 4096) keep 256 threads, 16 columns each; several norms get
// one kernel each, numbered per op, and a norm reads another's result.
// CHECK-LABEL: func.func @several
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_0
// CHECK: %[[LN:.*]] = memref.alloc() : memref<4x4096xf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_layer_norm_0 {{.*}} args({{.*}}, %[[LN]] : memref<4x4096xf16>)
// CHECK: %[[LNT:.*]] = bufferization.to_tensor %[[LN]]
// CHECK: bufferization.to_buffer %[[LNT]] read_only
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rms_norm_1
// CHECK: gpu.func @sgpu_rms_norm_0({{.*}}) workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[D:.*]] = arith.constant 4096 : index
// CHECK: %[[STEP:.*]] = arith.constant 256 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[D]] step %[[STEP]]
// CHECK: gpu.func @sgpu_layer_norm_0({{.*}}) workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.func @sgpu_rms_norm_1
func.func @several(%x: tensor<4x4096xf16>, %w: tensor<4096xf16>, %b: tensor<4096xf16>) -> (tensor<4x4096xf16>, tensor<4x4096xf16>) {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<4x4096xf16>, tensor<4096xf16> -> tensor<4x4096xf16>
  %z = sgpu.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f32} : tensor<4x4096xf16>, tensor<4096xf16>, tensor<4096xf16> -> tensor<4x4096xf16>
  %u = sgpu.rms_norm %z, %w {epsilon = 1.0e-05 : f32} : tensor<4x4096xf16>, tensor<4096xf16> -> tensor<4x4096xf16>
  return %y, %u : tensor<4x4096xf16>, tensor<4x4096xf16>
}
