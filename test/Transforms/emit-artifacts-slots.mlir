// RUN: rm -rf %t && sparse-opt %s -sgpu-emit-artifacts="output-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/program.txt

// Collectives on buffers: two in flight at once take slots 0 and 1, a slot
// is free again after its wait, and a reshape of a buffer is that buffer.
// CHECK: sparseopt-program 4
// CHECK-NEXT: # host function @slots
// CHECK-NEXT: buffer 0 input 0 128
// CHECK-NEXT: buffer 1 input 1 256
// CHECK-NEXT: arena 256
// CHECK-NEXT: buffer 2 temp 128 arena 0
// CHECK-NEXT: buffer 3 output 0 256
// CHECK-NEXT: allreduce slot=0 send=b0 recv=b2 count=64 type=bf16 op=sum
// CHECK-NEXT: allreduce slot=1 send=b1 recv=b3 count=64 type=f32 op=min
// CHECK-NEXT: wait slot=0
// CHECK-NEXT: allreduce slot=0 send=b2 recv=b2 count=64 type=bf16 op=prod
// CHECK-NEXT: wait slot=1
// CHECK-NEXT: wait slot=0
func.func @slots(%a: memref<8x8xbf16>, %b: memref<64xf32>) -> memref<64xf32> {
  %r = memref.alloc() : memref<8x8xbf16>
  %o = memref.alloc() : memref<64xf32>
  %t0 = sgpu.all_reduce_call %a into %r : memref<8x8xbf16>, memref<8x8xbf16>
  %t1 = sgpu.all_reduce_call %b into %o {kind = #sgpu.reduce<min>} : memref<64xf32>, memref<64xf32>
  sgpu.all_reduce_sync %t0, %a : memref<8x8xbf16>
  %flat = memref.collapse_shape %r [[0, 1]] : memref<8x8xbf16> into memref<64xbf16>
  %t2 = sgpu.all_reduce_call %flat into %flat {kind = #sgpu.reduce<prod>} : memref<64xbf16>, memref<64xbf16>
  sgpu.all_reduce_sync %t1, %b : memref<64xf32>
  sgpu.all_reduce_sync %t2, %flat : memref<64xbf16>
  return %o : memref<64xf32>
}
