// The warpgroup sparse-MMA kernel (kernel=wgmma) through the whole
// sgpu-compile pipeline: PTX text, the runtime program, and assembly with
// ptxas for sm_90a without spills or wgmma serialization. Two spmms: K = 128
// (16-byte aligned rows: the cp.async pipeline, 128-token tiles) and K = 37
// (the register-staged ping-pong, 64-token tiles).
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="kernel=wgmma output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not="wgmma.wait_group.sync.aligned 1" < %t/kernels.ptx
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=SUMMARY < %t/summary.txt
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75

// PTX: .version 8.5
// PTX: .target sm_90a
// PTX: .visible .entry sgpu_spmm_0(
// PTX: .maxntid 128, 1, 1
// PTX: cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// PTX: cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 4, %r{{[0-9]+}};
// PTX: cp.async.commit_group;
// PTX: cp.async.wait_group 3;
// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync 0;
// PTX: ld.shared.v2.b32
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.bf16.bf16 {[[ACC:(%r[0-9]+, ){63}%r[0-9]+]]}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, 0, 1, 1, 1, 0, 0;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.bf16.bf16 {[[ACC]]}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, 0, 1, 1, 1, 0, 0;
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: cp.async.wait_group 0;
// PTX: max.NaN.f32
// PTX: st.global.b32
// PTX: .visible .entry sgpu_spmm_1(
// PTX: st.shared.v4.b32
// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync 0;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {{{(%r[0-9]+, ){31}%r[0-9]+}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, 0, 1, 1, 1, 0, 0;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: cvt.rn.f16.f32
// PTX-NOT: cp.async

// 200 tokens -> 2 blocks of 128; 128 features -> 2 blocks of 64; the
// cp.async pipeline's 5 stages in dynamic shared memory.
// PROGRAM: launch sgpu_spmm_0 grid 2 2 1 block 128 1 1 smem 107520 args
// PROGRAM: launch sgpu_spmm_1 grid 1 1 1 block 128 1 1 smem 0 args

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
