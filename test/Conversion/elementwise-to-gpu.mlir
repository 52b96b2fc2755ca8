// Element-wise linalg ops of the host functions become generated kernels:
// one thread per V consecutive result elements (V = 8/4/2 dividing the last
// dimension, within 16 bytes per operand; else 1), 256 threads per block,
// each operand read at its indexing map of the elements' indices (a vector
// load along the result's last loop, one scalar for a broadcast along it,
// V loads for a transposed operand), the generic's body cloned per element.
// RUN: sparse-opt %s -split-input-file -convert-elementwise-to-linalg -convert-sgpu-to-gpu | FileCheck %s

// A residual add on tensors (what convert-elementwise-to-linalg makes a
// generic): 8 f16 elements (16 bytes) per thread, 4096 elements = 512
// threads = 2 blocks of 256.
// CHECK-LABEL: func.func @residual_add
// CHECK-SAME: (%[[X:.*]]: tensor<16x256xf16>, %[[Y:.*]]: tensor<16x256xf16>)
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<16x256xf16>
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<16x256xf16> to memref<16x256xf16>
// CHECK: %[[YB:.*]] = bufferization.to_buffer %[[Y]] read_only : tensor<16x256xf16> to memref<16x256xf16>
// CHECK: %[[BLOCKS:.*]] = arith.constant 2 : index
// CHECK: %[[T:.*]] = arith.constant 256 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0 blocks in (%[[BLOCKS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%[[XB]] : memref<16x256xf16>, %[[YB]] : memref<16x256xf16>, %[[OUT]] : memref<16x256xf16>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
// CHECK-NOT: linalg.
// CHECK: gpu.func @sgpu_elementwise_0(%[[A:.*]]: memref<16x256xf16>, %[[B:.*]]: memref<16x256xf16>, %[[O:.*]]: memref<16x256xf16>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[BASE:.*]] = arith.muli %[[BID]], %{{.*}} : index
// CHECK: %[[THR:.*]] = arith.addi %[[BASE]], %[[TID]] : index
// CHECK: %[[NEEDED:.*]] = arith.constant 512 : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[THR]], %[[NEEDED]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[ID:.*]] = arith.muli %[[THR]], %c8 : index
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %{{.*}} : index
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK: %[[AV:.*]] = vector.load %[[A]][%[[I]], %[[J]]] {alignment = 16 : i64} : memref<16x256xf16>, vector<8xf16>
// CHECK-COUNT-8: vector.extract %[[AV]]
// CHECK: %[[BV:.*]] = vector.load %[[B]][%[[I]], %[[J]]] {alignment = 16 : i64} : memref<16x256xf16>, vector<8xf16>
// CHECK-COUNT-8: arith.addf %{{.*}}, %{{.*}} : f16
// CHECK: %[[S:.*]] = vector.from_elements {{.*}} : vector<8xf16>
// CHECK: vector.store %[[S]], %[[O]][%[[I]], %[[J]]] {alignment = 16 : i64} : memref<16x256xf16>, vector<8xf16>
// CHECK: gpu.return
func.func @residual_add(%x: tensor<16x256xf16>, %y: tensor<16x256xf16>) -> tensor<16x256xf16> {
  %r = arith.addf %x, %y : tensor<16x256xf16>
  return %r : tensor<16x256xf16>
}

// -----

// An odd last dimension: one element per thread, scalar loads and store
// (1275 elements = 5 blocks, the last one masked).
// CHECK-LABEL: func.func @odd_add
// CHECK: gpu.func @sgpu_elementwise_0(%[[A:.*]]: memref<5x255xf16>, %[[B:.*]]: memref<5x255xf16>, %[[O:.*]]: memref<5x255xf16>)
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[BASE:.*]] = arith.muli %[[BID]], %{{.*}} : index
// CHECK: %[[ID:.*]] = arith.addi %[[BASE]], %[[TID]] : index
// CHECK: %[[TOTAL:.*]] = arith.constant 1275 : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %[[TOTAL]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %{{.*}} : index
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK: %[[AV:.*]] = memref.load %[[A]][%[[I]], %[[J]]] : memref<5x255xf16>
// CHECK: %[[BV:.*]] = memref.load %[[B]][%[[I]], %[[J]]] : memref<5x255xf16>
// CHECK: %[[S:.*]] = arith.addf %[[AV]], %[[BV]] : f16
// CHECK: memref.store %[[S]], %[[O]][%[[I]], %[[J]]] : memref<5x255xf16>
// CHECK: gpu.return
func.func @odd_add(%x: tensor<5x255xf16>, %y: tensor<5x255xf16>) -> tensor<5x255xf16> {
  %r = arith.addf %x, %y : tensor<5x255xf16>
  return %r : tensor<5x255xf16>
}

// -----


#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
#bcast1 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>

// Broadcasts: a [D] bias row and a size-1 dimension read at 0 (the map the
// importers write for RoPE tables); 4 f32 per thread, 800 elements = 200
// threads = 1 block, masked. Every operand's last dimension is the result's
// last loop, so each is one vector load; the body, with its own constant,
// is cloned per element.
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[BLOCKS:.*]] = arith.constant 1 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0 blocks in (%[[BLOCKS]], %{{.*}}, %{{.*}}) threads in ({{.*}}) args(%{{.*}} : memref<2x4x100xf32>, %{{.*}} : memref<100xf32>, %{{.*}} : memref<2x1x100xf32>, %{{.*}} : memref<2x4x100xf32>)
// CHECK: gpu.func @sgpu_elementwise_0(%[[X:.*]]: memref<2x4x100xf32>, %[[B:.*]]: memref<100xf32>, %[[S:.*]]: memref<2x1x100xf32>, %[[O:.*]]: memref<2x4x100xf32>)
// CHECK: %[[NEEDED:.*]] = arith.constant 200 : index
// CHECK: arith.cmpi ult, %[[THR:.*]], %[[NEEDED]] : index
// CHECK: %[[ID:.*]] = arith.muli %[[THR]], %c4 : index
// CHECK: %[[C400:.*]] = arith.constant 400 : index
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %[[C400]] : index
// CHECK: %[[C100:.*]] = arith.constant 100 : index
// CHECK: %[[Q:.*]] = arith.divui %[[ID]], %[[C100]] : index
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[J:.*]] = arith.remui %[[Q]], %[[C4]] : index
// CHECK: %[[K:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK: %[[XV:.*]] = vector.load %[[X]][%[[I]], %[[J]], %[[K]]] {alignment = 16 : i64} : memref<2x4x100xf32>, vector<4xf32>
// CHECK: %[[X0:.*]] = vector.extract %[[XV]][0]
// CHECK: %[[BV:.*]] = vector.load %[[B]][%[[K]]] {alignment = 16 : i64} : memref<100xf32>, vector<4xf32>
// CHECK: %[[B0:.*]] = vector.extract %[[BV]][0]
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[SV:.*]] = vector.load %[[S]][%[[I]], %[[ZERO]], %[[K]]] {alignment = 16 : i64} : memref<2x1x100xf32>, vector<4xf32>
// CHECK: %[[S0:.*]] = vector.extract %[[SV]][0]
// CHECK: %[[CST:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[T:.*]] = arith.addf %[[X0]], %[[B0]] : f32
// CHECK: %[[M:.*]] = arith.mulf %[[T]], %[[S0]] : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[M]], %[[CST]] : f32
// CHECK-COUNT-3: arith.maximumf
// CHECK: %[[RV:.*]] = vector.from_elements %[[R]], {{.*}} : vector<4xf32>
// CHECK: vector.store %[[RV]], %[[O]][%[[I]], %[[J]], %[[K]]] {alignment = 16 : i64} : memref<2x4x100xf32>, vector<4xf32>
func.func @broadcast(%x: tensor<2x4x100xf32>, %b: tensor<100xf32>, %s: tensor<2x1x100xf32>) -> tensor<2x4x100xf32> {
  %e = tensor.empty() : tensor<2x4x100xf32>
  %r = linalg.generic {indexing_maps = [#id3, #last, #bcast1, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b, %s : tensor<2x4x100xf32>, tensor<100xf32>, tensor<2x1x100xf32>) outs(%e : tensor<2x4x100xf32>) {
  ^bb0(%a: f32, %c: f32, %d: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %t = arith.addf %a, %c : f32
    %m = arith.mulf %t, %d : f32
    %r = arith.maximumf %m, %z : f32
    linalg.yield %r : f32
  } -> tensor<2x4x100xf32>
  return %r : tensor<2x4x100xf32>
}

// -----

// A named op (linalg.transpose) takes the same path: the thread of output
// elements (i, j..j+3) reads input elements (j..j+3, i), four scalar loads
// (the input's last dimension is not the result's last loop), and stores
// one vector.
// CHECK-LABEL: func.func @transpose
// CHECK-NOT: linalg.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0
// CHECK: gpu.func @sgpu_elementwise_0(%[[X:.*]]: memref<8x4xf32>, %[[O:.*]]: memref<4x8xf32>)
// CHECK: %[[I:.*]] = arith.divui
// CHECK: %[[J:.*]] = arith.remui
// CHECK: %[[V0:.*]] = memref.load %[[X]][%[[J]], %[[I]]] : memref<8x4xf32>
// CHECK: %[[J1:.*]] = arith.addi %[[J]], %c1
// CHECK: %[[V1:.*]] = memref.load %[[X]][%[[J1]], %[[I]]] : memref<8x4xf32>
// CHECK: memref.load %[[X]]
// CHECK: memref.load %[[X]]
// CHECK: %[[V:.*]] = vector.from_elements %[[V0]], %[[V1]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: vector.store %[[V]], %[[O]][%[[I]], %[[J]]] {alignment = 16 : i64} : memref<4x8xf32>, vector<4xf32>
func.func @transpose(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]
  return %t : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A body that reads its init gets the init's buffer as an input; a constant
// captured from the host function is cloned into the kernel.
// CHECK-LABEL: func.func @accumulate
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf16>, %[[ACC:.*]]: tensor<4x64xf16>)
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x64xf16>
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[AB:.*]] = bufferization.to_buffer %[[ACC]] read_only
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0 {{.*}} args(%[[XB]] : memref<4x64xf16>, %[[AB]] : memref<4x64xf16>, %[[OUT]] : memref<4x64xf16>)
// CHECK: gpu.func @sgpu_elementwise_0(%[[KX:.*]]: memref<4x64xf16>, %[[KA:.*]]: memref<4x64xf16>, %[[KO:.*]]: memref<4x64xf16>)
// CHECK: %[[XV:.*]] = vector.load %[[KX]]
// CHECK: %[[X0:.*]] = vector.extract %[[XV]][0]
// CHECK: %[[AV:.*]] = vector.load %[[KA]]
// CHECK: %[[A0:.*]] = vector.extract %[[AV]][0]
// CHECK: %[[K:.*]] = arith.constant 2.000000e+00 : f16
// CHECK: %[[M:.*]] = arith.mulf %[[X0]], %[[K]] : f16
// CHECK: %[[S:.*]] = arith.addf %[[M]], %[[A0]] : f16
// CHECK: %[[SV:.*]] = vector.from_elements %[[S]], {{.*}} : vector<8xf16>
// CHECK: vector.store %[[SV]], %[[KO]]
func.func @accumulate(%x: tensor<4x64xf16>, %acc: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %k = arith.constant 2.0 : f16
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x64xf16>) outs(%acc : tensor<4x64xf16>) {
  ^bb0(%a: f16, %o: f16):
    %m = arith.mulf %a, %k : f16
    %s = arith.addf %m, %o : f16
    linalg.yield %s : f16
  } -> tensor<4x64xf16>
  return %r : tensor<4x64xf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A fill that only initializes an outs the body never reads is erased with
// its tensor.empty; a fill that is a result is a kernel storing the constant
// (15 elements: one block, masked).
// CHECK-LABEL: func.func @fills
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.empty
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0 {{.*}} args(%{{.*}} : memref<4x64xbf16>, %{{.*}} : memref<4x64xbf16>)
// CHECK: %[[FILL:.*]] = memref.alloc() : memref<3x5xf32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_1 {{.*}} args(%[[FILL]] : memref<3x5xf32>)
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @sgpu_elementwise_0
// CHECK: arith.negf %{{.*}} : bf16
// CHECK: gpu.func @sgpu_elementwise_1(%[[O:.*]]: memref<3x5xf32>)
// CHECK: arith.constant 15 : index
// CHECK: %[[C:.*]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT: memref.store %[[C]], %[[O]]
func.func @fills(%x: tensor<4x64xbf16>) -> (tensor<4x64xbf16>, tensor<3x5xf32>) {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x64xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x64xbf16>) outs(%f : tensor<4x64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.negf %a : bf16
    linalg.yield %r : bf16
  } -> tensor<4x64xbf16>
  %one = arith.constant 1.5 : f32
  %e2 = tensor.empty() : tensor<3x5xf32>
  %g = linalg.fill ins(%one : f32) outs(%e2 : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %n, %g : tensor<4x64xbf16>, tensor<3x5xf32>
}

// -----

// Math ops on tensors: one kernel each, computing in f16 as written (no
// extension is added; convert-gpu-to-nvvm lowers the math ops).
// CHECK-LABEL: func.func @math_f16
// CHECK-COUNT-3: gpu.launch_func
// CHECK: gpu.func @sgpu_elementwise_0
// CHECK-NOT: arith.extf
// CHECK: math.exp %{{.*}} : f16
// CHECK: gpu.func @sgpu_elementwise_1
// CHECK: math.tanh %{{.*}} : f16
// CHECK: gpu.func @sgpu_elementwise_2
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f16
func.func @math_f16(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %e = math.exp %x : tensor<4x64xf16>
  %t = math.tanh %e : tensor<4x64xf16>
  %s = arith.mulf %t, %t : tensor<4x64xf16>
  return %s : tensor<4x64xf16>
}

// -----

// Named element-wise ops are generalized; a tensor read twice is passed once.
// CHECK-LABEL: func.func @named
// CHECK-NOT: linalg.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0 {{.*}} args(%{{.*}} : memref<4x64xbf16>, %{{.*}} : memref<4x64xbf16>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_1 {{.*}} args(%{{.*}} : memref<4x64xbf16>, %{{.*}} : memref<4x64xbf16>, %{{.*}} : memref<4x64xbf16>)
// CHECK: gpu.func @sgpu_elementwise_0(%[[X:.*]]: memref<4x64xbf16>, %{{.*}}: memref<4x64xbf16>)
// CHECK: %[[A:.*]] = vector.load %[[X]]
// CHECK: %[[A0:.*]] = vector.extract %[[A]][0]
// CHECK: %[[B:.*]] = vector.load %[[X]]
// CHECK: %[[B0:.*]] = vector.extract %[[B]][0]
// CHECK: arith.addf %[[A0]], %[[B0]] : bf16
// CHECK: gpu.func @sgpu_elementwise_1
// CHECK: arith.mulf %{{.*}}, %{{.*}} : bf16
func.func @named(%x: tensor<4x64xbf16>, %y: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  %e = tensor.empty() : tensor<4x64xbf16>
  %a = linalg.add ins(%x, %x : tensor<4x64xbf16>, tensor<4x64xbf16>) outs(%e : tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %m = linalg.mul ins(%a, %y : tensor<4x64xbf16>, tensor<4x64xbf16>) outs(%e : tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return %m : tensor<4x64xbf16>
}
