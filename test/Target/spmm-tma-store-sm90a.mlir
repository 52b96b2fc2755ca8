// The TMA spmm kernel's TMA-store epilogue (epilogue=auto, the default)
// down to PTX and ptxas: Y is one more tensor map (the fourth here) (token rows, a box of 128
// tokens x 64 features, 128B swizzle), each consumer warpgroup rounds its
// accumulators to f16 pairs, writes a box with eight stmatrix .trans,
// fences the writes for the async proxy, syncs on its named barrier and
// one thread issues the bulk tensor store; before the next box (and before
// the block exits) that thread waits until the store has read the box.
// ptxas assembles it for sm_90a without spills or wgmma serialization.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="kernel=wgmma tile-n=256 split-k=1 output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75
// The register epilogue for comparison: no fourth map, no staging.
// RUN: rm -rf %t.r && sparse-opt %s --sgpu-compile="kernel=wgmma tile-n=256 split-k=1 epilogue=registers output-dir=%t.r" -o /dev/null
// RUN: FileCheck %s --check-prefix=REGS < %t.r/program.txt
// RUN: FileCheck %s --check-prefix=REGS-PTX < %t.r/kernels.ptx

// 4 stages of 41 KiB, 32 KiB of staging, the barriers and the alignment
// slack: 201792 bytes (169024 without the staging).
// PROGRAM: launch sgpu_spmm_0 grid 4 1 1 block 384 1 1 smem 201792 pdl args tmap:b0:f16:512x1024:256x64:128 tmap:b1:f16:256x512:128x32:64 tmap:b2:i32:16x512:8x32:0 tmap:b3:f16:512x256:128x64:128
// REGS: launch sgpu_spmm_0 grid 4 1 1 block 384 1 1 smem 169024 pdl args tmap:b0:f16:512x1024:256x64:128 tmap:b1:f16:256x512:128x32:64 tmap:b2:i32:16x512:8x32:0 b3

// PTX-LABEL: .entry sgpu_spmm_0(
// PTX: .param .align 64 .b8 sgpu_spmm_0_param_3[128]
// PTX: wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16
// PTX: cp.async.bulk.wait_group.read 0;
// PTX: bar.sync {{.*}}%r{{[0-9]+}}, 128;
// PTX: cvt.rn.f16x2.f32
// PTX: stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX: fence.proxy.async.shared::cta;
// PTX-NEXT: // end inline asm
// PTX-NEXT: bar.sync {{.*}}%r{{[0-9]+}}, 128;
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// PTX: cp.async.bulk.commit_group;
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// PTX: cp.async.bulk.commit_group;
// PTX: cp.async.bulk.wait_group.read 0;
// PTX: ret;
// REGS-PTX-LABEL: .entry sgpu_spmm_0(
// REGS-PTX-NOT: stmatrix
// REGS-PTX: st.global.b32
// REGS-PTX-NOT: stmatrix

// PTXAS: Compiling entry function 'sgpu_spmm_0' for 'sm_90a'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @forward(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}
