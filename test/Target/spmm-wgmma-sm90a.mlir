// The warpgroup sparse-MMA kernels (kernel=wgmma) through the whole
// sgpu-compile pipeline: PTX text, the runtime program, and assembly with
// ptxas for sm_90a without spills or wgmma serialization. Two spmms: K = 128
// (16-byte aligned rows: the warp-specialized TMA kernel, tensor maps as
// by-value kernel parameters) and K = 37 (the register-staged ping-pong).
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="kernel=wgmma output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=SUMMARY < %t/summary.txt
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75

// PTX: .version 8.5
// PTX: .target sm_90a
// PTX: .visible .entry sgpu_spmm_0(
// PTX-NEXT: .param .align 64 .b8 sgpu_spmm_0_param_0[128],
// PTX-NEXT: .param .align 64 .b8 sgpu_spmm_0_param_1[128],
// PTX-NEXT: .param .align 64 .b8 sgpu_spmm_0_param_2[128],
// PTX: .maxntid 384, 1, 1
// PTX-NEXT: .minnctapersm 1
// PTX: mbarrier.init.shared::cta.b64
// PTX: fence.mbarrier_init.release.cluster;
// PTX: bar.sync 0;
// PTX: setmaxnreg.inc.sync.aligned.u32 232;
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: ld.shared.b32
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16 {[[ACC:(%r[0-9]+, ){31}%r[0-9]+]]}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, 0, 1, 1, 1, 0, 0;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16 {[[ACC]]}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, 0, 1, 1, 1, 0, 0;
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX: mbarrier.arrive.shared::cta.b64 _, [%r{{[0-9]+}}];
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: max.NaN.f32
// The epilogue pairs adjacent features through shuffles: 8-byte f32 stores.
// PTX: shfl.sync.idx.b32
// PTX: st.global.v2.b32
// PTX: setmaxnreg.dec.sync.aligned.u32 40;
// PTX: prefetch.tensormap [%rd{{[0-9]+}}];
// PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX-COUNT-3: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// PTX: .visible .entry sgpu_spmm_1(
// PTX: st.shared.v4.b32
// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync 0;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {{{(%r[0-9]+, ){31}%r[0-9]+}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, 0, 1, 1, 1, 0, 0;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: cvt.rn.f16.f32
// PTX-NOT: cp.async

// 200 tokens -> 4 blocks of 64 (the table halves 256-token tiles while the
// grid has fewer blocks than multiprocessors); 128 features -> 1 block; two
// k-tiles, so two stages of 17 KiB. The tensor maps are encoded by the
// runtime from the buffers (the metadata seen as 8 row tiles x 64 words).
// PROGRAM: launch sgpu_spmm_0 grid 4 1 1 block 384 1 1 smem 35872 pdl args tmap:b0:bf16:200x128:64x64:128 tmap:b1:bf16:128x64:128x32:64 tmap:b2:i32:8x64:8x32:0 b6
// PROGRAM: launch sgpu_spmm_1 grid 1 1 1 block 128 1 1 smem 0 pdl args b3 b4 b5 b7

// SUMMARY: kernel sgpu_spmm_0: {{[1-9][0-9]*}} sparse MMA instructions
// SUMMARY: kernel sgpu_spmm_1: 2 sparse MMA instructions

// PTXAS: Compiling entry function 'sgpu_spmm_{{[01]}}' for 'sm_90a'
// PTXAS-NEXT: Function properties for sgpu_spmm_{{[01]}}
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'sgpu_spmm_{{[01]}}' for 'sm_90a'
// PTXAS-NEXT: Function properties for sgpu_spmm_{{[01]}}
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @forward(%x: tensor<200x128xbf16>, %v: tensor<128x64xbf16>, %m: tensor<512xi32>,
                   %x2: tensor<8x37xf16>, %v2: tensor<16x32xf16>, %m2: tensor<32xi32>)
    -> (tensor<200x128xf32>, tensor<8x16xf16>) {
  %w = sgpu.assemble %v, %m : tensor<128x64xbf16>, tensor<512xi32> -> !sgpu.compressed<128x128xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w {activation = #sgpu.activation<relu>} : tensor<200x128xbf16>, !sgpu.compressed<128x128xbf16, #sgpu.nm<2:4>> -> tensor<200x128xf32>
  %w2 = sgpu.assemble %v2, %m2 : tensor<16x32xf16>, tensor<32xi32> -> !sgpu.compressed<16x37xf16, #sgpu.nm<2:4>>
  %y2 = sgpu.spmm %x2, %w2 : tensor<8x37xf16>, !sgpu.compressed<16x37xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y, %y2 : tensor<200x128xf32>, tensor<8x16xf16>
}
