// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-loops | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-loops=twell-report=true | FileCheck %s --check-prefix=REPORT

// The pack builds the concrete parts of !sgpu.twell (T = 16, C = 4: 4 words
// per (row, tile), capacity 3; F = 40: 3 tiles, the last one 8 wide), the
// consumer reads only them: the fallback row where the flag is set, else
// each tile's count and entries.
// CHECK-LABEL: func @twell_gated
// CHECK: %[[H:.*]] = bufferization.to_buffer %arg0 read_only : tensor<4x40xbf16> to memref<4x40xbf16>
// CHECK: %[[WORDS:.*]] = memref.alloc() : memref<4x3x4xi32>
// CHECK: %[[FLAGS:.*]] = memref.alloc() : memref<4xi32>
// CHECK: %[[FB:.*]] = memref.alloc() : memref<4x40xbf16>
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<1xi32>
// CHECK: %[[NROWS:.*]] = scf.for %[[M:.*]] = {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i32)
// CHECK: %[[OVER:.*]] = scf.for %[[T:.*]] = {{.*}} iter_args(%{{.*}} = %false) -> (i1)
//   The last tile is partial: width min(16, 40 - 16 t).
// CHECK: arith.minui
// CHECK: %[[COUNT:.*]] = scf.for {{.*}} iter_args(%[[N:.*]] = %{{.*}}) -> (i32)
// CHECK: %[[V:.*]] = memref.load %[[H]]
// CHECK: %[[NZ:.*]] = arith.cmpf une, %[[V]]
// CHECK: %[[FITS:.*]] = arith.cmpi ult, %[[N]], %c3_i32
// CHECK: %[[PUT:.*]] = arith.andi %[[NZ]], %[[FITS]]
// CHECK: scf.if %[[PUT]]
// CHECK: %[[BITS:.*]] = arith.bitcast %[[V]] : bf16 to i16
// CHECK: %[[WIDE:.*]] = arith.extui %[[BITS]] : i16 to i32
// CHECK: %[[HIGH:.*]] = arith.shli %[[WIDE]], %c16_i32
// CHECK: %[[ENTRY:.*]] = arith.ori %[[HIGH]]
// CHECK: memref.store %[[ENTRY]], %[[WORDS]][%[[M]], %[[T]], %{{.*}}] : memref<4x3x4xi32>
// CHECK: arith.select %[[NZ]]
// CHECK: memref.store %[[COUNT]], %[[WORDS]][%[[M]], %[[T]], %c0{{.*}}] : memref<4x3x4xi32>
// CHECK: arith.cmpi ugt, %[[COUNT]], %c3_i32
// CHECK: %[[FLAG:.*]] = arith.extui %[[OVER]] : i1 to i32
// CHECK: memref.store %[[FLAG]], %[[FLAGS]][%[[M]]]
// CHECK: %[[KEEP:.*]] = arith.select %[[OVER]]
// CHECK: memref.store %[[KEEP]], %[[FB]][%[[M]], %{{.*}}]
// CHECK: memref.store %[[NROWS]], %[[ROWS]][%{{.*}}] : memref<1xi32>
// CHECK-NOT: vector.print
//   The consumer.
// CHECK: %[[Y:.*]] = memref.alloc() : memref<4x8xbf16>
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<8xf32>
// CHECK: scf.for %[[MM:.*]] =
// CHECK: %[[F:.*]] = memref.load %[[FLAGS]][%[[MM]]]
// CHECK: %[[ISOVER:.*]] = arith.cmpi ne, %[[F]]
// CHECK: scf.if %[[ISOVER]]
// CHECK: memref.load %[[FB]][%[[MM]], %{{.*}}]
// CHECK: } else {
// CHECK: %[[CNT:.*]] = memref.load %[[WORDS]][%[[MM]], %{{.*}}, %c0{{.*}}]
// CHECK: %[[CNTI:.*]] = arith.index_castui %[[CNT]] : i32 to index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[CNTI]]
// CHECK: %[[W:.*]] = memref.load %[[WORDS]]
// CHECK: arith.andi %[[W]], %c65535_i32
// CHECK: %[[HI:.*]] = arith.shrui %[[W]], %c16_i32
// CHECK: %[[H16:.*]] = arith.trunci %[[HI]] : i32 to i16
// CHECK: arith.bitcast %[[H16]] : i16 to bf16
//   gated: u = X[m] . Wu[j] in f32, then h * u * Wd[:, j].
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK: memref.dealloc %[[ACC]]
// CHECK: bufferization.to_tensor %[[Y]]
// CHECK-NOT: sgpu.twell

// REPORT-LABEL: func @twell_gated
// REPORT: vector.print str "twell fallback rows: "
// REPORT: %[[C:.*]] = memref.load
// REPORT-NEXT: vector.print %[[C]] : i32
func.func @twell_gated(%h: tensor<4x40xbf16>, %wd: tensor<8x40xbf16>, %x: tensor<4x8xbf16>, %wu: tensor<40x8xbf16>) -> tensor<4x8xbf16> {
  %p = sgpu.twell_pack %h : tensor<4x40xbf16> -> !sgpu.twell<4x40xbf16, #sgpu.twell<tile = 16, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<4x8xbf16>, tensor<40x8xbf16>) : !sgpu.twell<4x40xbf16, #sgpu.twell<tile = 16, compression = 4>>, tensor<8x40xbf16> -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// Ungated f16, two consumers of one pack: the parts are built once.
// CHECK-LABEL: func @twell_two_consumers
// CHECK: memref.alloc() : memref<2x2x4xi32>
// CHECK-NOT: memref.alloc() : memref<2x2x4xi32>
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK-NOT: -> (f32)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: return
func.func @twell_two_consumers(%h: tensor<2x64xf16>, %wd: tensor<4x64xf16>, %wd2: tensor<8x64xf16>) -> (tensor<2x4xf16>, tensor<2x8xf16>) {
  %p = sgpu.twell_pack %h : tensor<2x64xf16> -> !sgpu.twell<2x64xf16, #sgpu.twell<tile = 32, compression = 8>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<2x64xf16, #sgpu.twell<tile = 32, compression = 8>>, tensor<4x64xf16> -> tensor<2x4xf16>
  %y2 = sgpu.twell_ffn %p, %wd2 : !sgpu.twell<2x64xf16, #sgpu.twell<tile = 32, compression = 8>>, tensor<8x64xf16> -> tensor<2x8xf16>
  return %y, %y2 : tensor<2x4xf16>, tensor<2x8xf16>
}
