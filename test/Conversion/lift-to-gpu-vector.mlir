// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// The lift kernel (LiftToGPU.cpp) writes whole 4-column chunks: a chunk
// copies 4 consecutive source columns from an even one, loaded as two
// 4-byte aligned vector<2xf16> words. With the pitch a multiple of 8 a
// thread writes two chunks as one 16-byte vector<8xf16> store: 16 x 192 / 8
// = 384 threads, 2 blocks. No lifted column reads past K = 128 (whole
// groups, pitch = K'), so no word is selected against zero.
// CHECK-LABEL: func.func @tiled
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_lift_0 blocks in (%c2,
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<16x128xf16>, %{{.*}}: memref<16x192xf16>)
// CHECK: arith.cmpi ult, %{{.*}}, %c384 : index
// CHECK-NOT: arith.select {{.*}} : vector<2xf16>
// CHECK-COUNT-4: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<16x128xf16>, vector<2xf16>
// CHECK-NOT: arith.select {{.*}} : vector<2xf16>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3] : vector<2xf16>, vector<2xf16>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3] : vector<2xf16>, vector<2xf16>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf16>, vector<4xf16>
// CHECK: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<16x192xf16>, vector<8xf16>
// CHECK-NOT: memref.load
// CHECK: gpu.return
func.func @tiled(%x: tensor<16x128xf16>) -> tensor<16x192xf16> {
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<16x128xf16> -> tensor<16x192xf16>
  return %y : tensor<16x192xf16>
}

// -----

// K = 40 is not a multiple of 6: the last group's window 1 (columns 38..41)
// straddles K. Each word is checked on its own (both of its columns are
// below K or neither, K being even) and loads column 0 when out.
// CHECK-LABEL: func.func @straddle
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<9x40xbf16>, %{{.*}}: memref<9x56xbf16>)
// CHECK: arith.cmpi ult, %{{.*}}, %c63 : index
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<2xbf16>
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[S:.*]], %c40 : index
// CHECK: %[[AT:.*]] = arith.select %[[OK]], %[[S]], %c0{{[_0-9]*}} : index
// CHECK-NEXT: %[[W:.*]] = vector.load %arg0[%{{.*}}, %[[AT]]] {alignment = 4 : i64} : memref<9x40xbf16>, vector<2xbf16>
// CHECK-NEXT: arith.select %[[OK]], %[[W]], %[[ZERO]] : vector<2xbf16>
// CHECK-COUNT-3: arith.select %{{.*}}, %{{.*}}, %[[ZERO]] : vector<2xbf16>
// CHECK: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<9x56xbf16>, vector<8xbf16>
func.func @straddle(%x: tensor<9x40xbf16>) -> tensor<9x56xbf16> {
  %y = sgpu.lift %x {pattern = #sgpu.nm<4:6>} : tensor<9x40xbf16> -> tensor<9x56xbf16>
  return %y : tensor<9x56xbf16>
}

// -----

// K' = 204 is a multiple of 4 but not of 8: one chunk per thread, an
// 8-byte vector<4xf16> store (7 x 204 / 4 = 357 threads).
// CHECK-LABEL: func.func @one_chunk
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<7x130xf16>, %{{.*}}: memref<7x204xf16>)
// CHECK: arith.cmpi ult, %{{.*}}, %c357 : index
// CHECK-COUNT-2: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<7x130xf16>, vector<2xf16>
// CHECK-NOT: vector.load
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3] : vector<2xf16>, vector<2xf16>
// CHECK-NEXT: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<7x204xf16>, vector<4xf16>
func.func @one_chunk(%x: tensor<7x130xf16>) -> tensor<7x204xf16> {
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<7x130xf16> -> tensor<7x204xf16>
  return %y : tensor<7x204xf16>
}

// -----

// An odd K: source rows are not 4-byte aligned, so the kernel keeps one
// thread per element (5 x 60 = 300 threads): a scalar load at the
// clamped source column, a select against zero, a scalar store.
// CHECK-LABEL: func.func @odd_k
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<5x37xf16>, %{{.*}}: memref<5x60xf16>)
// CHECK: arith.cmpi ult, %{{.*}}, %c300 : index
// CHECK-NOT: vector.
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[S:.*]], %c37 : index
// CHECK: %[[AT:.*]] = arith.select %[[OK]], %[[S]], %c0{{[_0-9]*}} : index
// CHECK-NEXT: %[[V:.*]] = memref.load %arg0[%{{.*}}, %[[AT]]] : memref<5x37xf16>
// CHECK: %[[R:.*]] = arith.select %[[OK]], %[[V]], %{{.*}} : f16
// CHECK-NEXT: memref.store %[[R]], %arg1[%{{.*}}, %{{.*}}] : memref<5x60xf16>
// CHECK-NOT: vector.
// CHECK: gpu.return
func.func @odd_k(%x: tensor<5x37xf16>) -> tensor<5x60xf16> {
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<5x37xf16> -> tensor<5x60xf16>
  return %y : tensor<5x60xf16>
}
