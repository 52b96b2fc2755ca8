// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// A blocking all-reduce: started and synchronized back to back, out of place
// into a new buffer that becomes the result.
// CHECK-LABEL: func @blocking
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xbf16>)
// CHECK: %[[S:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<16x64xbf16> to memref<16x64xbf16>
// CHECK: %[[R:.*]] = memref.alloc() : memref<16x64xbf16>
// CHECK: %[[T:.*]] = sgpu.all_reduce_call %[[S]] into %[[R]] : memref<16x64xbf16>, memref<16x64xbf16>
// CHECK: %[[S2:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: sgpu.all_reduce_sync %[[T]], %[[S2]] : memref<16x64xbf16>
// CHECK: %[[Y:.*]] = bufferization.to_tensor %[[R]] restrict writable
// CHECK: return %[[Y]]
func.func @blocking(%x: tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  %y = sgpu.all_reduce %x : tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// An asynchronous one: the call stays where the start was, the sync where
// the wait was, so the matmul in between overlaps the reduction. The sync
// reads the started input again, which keeps its buffer alive and unwritten.
// The reduction kind travels with the call.
// CHECK-LABEL: func @overlapped
// CHECK: %[[T:.*]] = sgpu.all_reduce_call %{{.*}} into %[[R:.*]] {kind = #sgpu.reduce<max>}
// CHECK: sgpu.gemm_call
// CHECK: %[[S2:.*]] = bufferization.to_buffer %[[X:.*]] read_only
// CHECK: sgpu.all_reduce_sync %[[T]], %[[S2]]
// CHECK: bufferization.to_tensor %[[R]]
func.func @overlapped(%x: tensor<16x64xf16>, %w: tensor<64x64xf16>) -> (tensor<16x64xf16>, tensor<16x64xf16>) {
  %t = sgpu.all_reduce_start %x {kind = #sgpu.reduce<max>} : tensor<16x64xf16>
  %h = sgpu.matmul %x, %w : tensor<16x64xf16>, tensor<64x64xf16> -> tensor<16x64xf16>
  %y = sgpu.all_reduce_wait %t, %x : tensor<16x64xf16>
  return %y, %h : tensor<16x64xf16>, tensor<16x64xf16>
}
