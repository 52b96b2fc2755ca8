// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=mma" | FileCheck %s

// M = 70 (two 64-token blocks, masked tail), N = 20 (two 16-row tiles,
// masked), K = 40 (padded to 64: two k-steps, masked K tail).
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @spmm(%[[X:.*]]: tensor<70x40xf16>, %[[V:.*]]: tensor<32x32xf16>, %[[M:.*]]: tensor<64xi32>)
// CHECK-DAG: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<70x40xf16> to memref<70x40xf16>
// CHECK-DAG: %[[VB:.*]] = bufferization.to_buffer %[[V]] read_only
// CHECK-DAG: %[[MB:.*]] = bufferization.to_buffer %[[M]] read_only
// CHECK: %[[Y:.*]] = memref.alloc() : memref<70x20xf16>
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%[[C2]], %{{.*}}, %{{.*}}) threads in (%[[C128]], %{{.*}}, %{{.*}}) args(%[[XB]] : memref<70x40xf16>, %[[VB]] : memref<32x32xf16>, %[[MB]] : memref<64xi32>, %[[Y]] : memref<70x20xf16>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[Y]] restrict writable
// CHECK: return %[[R]]
// CHECK: gpu.module @sgpu_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx85">]
// CHECK: gpu.func @sgpu_spmm_0(%{{.*}}: memref<70x40xf16>, %{{.*}}: memref<32x32xf16>, %{{.*}}: memref<64xi32>, %{{.*}}: memref<70x20xf16>) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 4 : i64} : memref<32x32xf16>, vector<2xf16>
// CHECK: memref.load %{{.*}} : memref<64xi32>
// CHECK: llvm.inline_asm "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9,$10,$11}, {$12,$13,$14,$15}, $16, 0x0;", "=f,=f,=f,=f,r,r,r,r,r,r,r,r,f,f,f,f,r"
// CHECK-COUNT-7: llvm.inline_asm "mma.sp::ordered_metadata
// CHECK-NOT: llvm.inline_asm
// CHECK: scf.yield
// The epilogue masks the token and feature tails.
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: scf.if
// CHECK: memref.store %{{.*}} : memref<70x20xf16>
func.func @spmm(%x: tensor<70x40xf16>, %v: tensor<32x32xf16>, %m: tensor<64xi32>) -> tensor<70x20xf16> {
  %w = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<70x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<70x20xf16>
  return %y : tensor<70x20xf16>
}

// -----

// bf16 with a ReLU epilogue and full tiles: no masks, f32 output.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// CHECK: gpu.func @sgpu_spmm_0
// CHECK: m16n8k32.row.col.f32.bf16.bf16.f32
// CHECK-NOT: arith.select
// CHECK: arith.maximumf
// CHECK-NOT: arith.truncf
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}} : memref<128x64xf32>
func.func @spmm_bf16(%x: tensor<128x64xbf16>, %v: tensor<64x32xbf16>, %m: tensor<128xi32>) -> tensor<128x64xf32> {
  %w = sgpu.assemble %v, %m : tensor<64x32xbf16>, tensor<128xi32> -> !sgpu.compressed<64x64xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w {activation = #sgpu.activation<relu>} : tensor<128x64xbf16>, !sgpu.compressed<64x64xbf16, #sgpu.nm<2:4>> -> tensor<128x64xf32>
  return %y : tensor<128x64xf32>
}

// -----

// Odd K: the activation rows are not 4-byte aligned, so pairs are loaded as
// two masked scalars.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.func @sgpu_spmm_0
// CHECK: memref.load %{{.*}} : memref<8x37xf16>
// CHECK: vector.from_elements
func.func @spmm_odd_k(%x: tensor<8x37xf16>, %v: tensor<16x32xf16>, %m: tensor<32xi32>) -> tensor<8x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x32xf16>, tensor<32xi32> -> !sgpu.compressed<16x37xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<8x37xf16>, !sgpu.compressed<16x37xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// Another chip: the target attribute follows the options.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="chip=sm_80 features=+ptx86" | FileCheck %s --check-prefix=SM80
// SM80: gpu.module @sgpu_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx86">]
func.func @other_chip(%x: tensor<8x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>) -> tensor<8x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// sgpu.compress of a constant is compressed at compile time: the kernel reads
// two constants (a zero weight: values 0, metadata words 0x44444444).
// CHECK-LABEL: func.func @constant_weight
// CHECK-DAG: arith.constant dense<0.000000e+00> : tensor<16x16xf16>
// CHECK-DAG: arith.constant dense<1145324612> : tensor<16xi32>
// CHECK-NOT: sgpu.compress
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
func.func @constant_weight(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  %w = arith.constant dense<0.0> : tensor<16x32xf16>
  %c = sgpu.compress %w : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A bias is a fifth kernel argument, added in f32 before the activation.
// CHECK-LABEL: func.func @bias
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 {{.*}} args(%{{.*}} : memref<64x32xf16>, %{{.*}} : memref<16x16xf16>, %{{.*}} : memref<16xi32>, %{{.*}} : memref<16xbf16>, %{{.*}} : memref<64x16xf16>)
// CHECK: gpu.func @sgpu_spmm_0(%{{.*}}: memref<64x32xf16>, %{{.*}}: memref<16x16xf16>, %{{.*}}: memref<16xi32>, %[[B:.*]]: memref<16xbf16>, %{{.*}}: memref<64x16xf16>)
// CHECK: %[[BV:.*]] = memref.load %[[B]]
// CHECK: arith.extf %[[BV]] : bf16 to f32
// CHECK: arith.addf
// CHECK: arith.maximumf
func.func @bias(%x: tensor<64x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>, %b: tensor<16xbf16>) -> tensor<64x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w bias(%b : tensor<16xbf16>) {activation = #sgpu.activation<relu>} : tensor<64x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<64x16xf16>
  return %y : tensor<64x16xf16>
}

// -----

// A lift becomes a gather kernel launched before the sparse matmul that
// reads it: one thread per two 4-column chunks (8 elements, four 32-bit
// loads and one 16-byte store, lift-to-gpu-vector.mlir), 70 x 144 / 8 =
// 1260 threads -> 5 blocks.
// CHECK-LABEL: func.func @lifted
// CHECK: %[[XB:.*]] = bufferization.to_buffer %arg0 read_only : tensor<70x96xf16> to memref<70x96xf16>
// CHECK: %[[L:.*]] = memref.alloc() : memref<70x144xf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_lift_0 blocks in (%c5, %{{.*}}, %{{.*}}) threads in (%c256, %{{.*}}, %{{.*}}) args(%[[XB]] : memref<70x96xf16>, %[[L]] : memref<70x144xf16>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// CHECK: gpu.func @sgpu_spmm_0
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<70x96xf16>, %{{.*}}: memref<70x144xf16>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: arith.cmpi ult, %{{.*}}, %c1260
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<70x144xf16>, vector<8xf16>
func.func @lifted(%x: tensor<70x96xf16>, %v: tensor<16x80xf16>, %m: tensor<80xi32>) -> tensor<70x16xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<70x96xf16> -> tensor<70x144xf16>
  %w = sgpu.assemble %v, %m : tensor<16x80xf16>, tensor<80xi32> -> !sgpu.compressed<16x144xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<70x144xf16>, !sgpu.compressed<16x144xf16, #sgpu.nm<2:4>> -> tensor<70x16xf16>
  return %y : tensor<70x16xf16>
}
