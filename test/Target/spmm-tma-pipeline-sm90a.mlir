// The TMA kernel's steady state: a problem with many k-tiles (K = 1024, 16
// tiles) must assemble without ptxas serializing the wgmmas (C7514: a
// write to the metadata register of an in-flight group, or a read of its
// accumulators) and without spills, for the 256-token tile (128
// accumulators per thread under the 232-register consumer budget).
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="kernel=wgmma tile-n=256 output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75

// The loop body holds two k-tiles, each loading its own metadata words.
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX: ld.shared.b32 [[E0:%r[0-9]+]],
// PTX: ld.shared.b32 [[E1:%r[0-9]+]],
// PTX: wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16 {{.*}}, [[E0]], 0, 1, 1, 1, 0, 0;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16 {{.*}}, [[E1]], 0, 1, 1, 1, 0, 0;
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX: ld.shared.b32 [[E2:%r[0-9]+]],
// PTX: ld.shared.b32 [[E3:%r[0-9]+]],
// PTX: wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16 {{.*}}, [[E2]], 0, 1, 1, 1, 0, 0;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16 {{.*}}, [[E3]], 0, 1, 1, 1, 0, 0;
// PTX: wgmma.wait_group.sync.aligned 0;

// PTXAS: Compiling entry function 'sgpu_spmm_0' for 'sm_90a'
// PTXAS-NEXT: Function properties for sgpu_spmm_0
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @forward(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}
