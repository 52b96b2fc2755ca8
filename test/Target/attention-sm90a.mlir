// The tensor-core attention kernel (chosen by hand: auto calls cuDNN for
// these shapes) through the whole pipeline: the PTX has
// the double-buffered cp.async copies (src-size form for the zero-filled
// tail), ldmatrix (plain for K, transposed for V), mma.sync on bf16 and f16
// and ex2.approx; ptxas assembles both for sm_90a without spills (D = 128
// keeps its state in registers).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %s --sgpu-compile="output-dir=%t/a" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/a/kernels.ptx
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/a/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/a/kernels.ptx -o %t/a.cubin > %t/a.log 2>&1
// RUN: FileCheck %s --check-prefix=SPILLS < %t/a.log

// Grids: 32 query tiles x 32 heads; 2 tiles x 2 batches x 4 heads.
// PROGRAM: launch sgpu_attention_mma_0 grid 1024 1 1 block 128 1 1 smem 69760
// PROGRAM: launch sgpu_attention_mma_1 grid 16 1 1 block 128 1 1 smem 36992
// (The backend places the blocks freely: the instructions are checked as
// present in each kernel, not in order.)
// PTX-LABEL: .entry sgpu_attention_mma_0
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, 16;
// PTX-DAG: cp.async.commit_group;
// PTX-DAG: cp.async.wait_group 1;
// PTX-DAG: cp.async.wait_group 0;
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: ex2.approx.f32
// PTX-LABEL: .entry sgpu_attention_mma_1
// Sk = 100: the last tile's rows past 100 are zero-filled (src-size 0).
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, %r{{[0-9]+}};
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// SPILLS-COUNT-2: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @attention(%q: tensor<1x32x2048x128xbf16>, %k: tensor<1x8x2048x128xbf16>, %v: tensor<1x8x2048x128xbf16>,
                     %qh: tensor<2x4x100x64xf16>, %kh: tensor<2x2x100x64xf16>)
    -> (tensor<1x32x2048x128xbf16>, tensor<2x4x100x64xf16>) {
  %o = sgpu.attention %q, %k, %v {causal, scale = 8.838834764e-02 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores>} : tensor<1x32x2048x128xbf16>, tensor<1x8x2048x128xbf16>, tensor<1x8x2048x128xbf16> -> tensor<1x32x2048x128xbf16>
  %oh = sgpu.attention %qh, %kh, %kh {causal, scale = 1.25e-01 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores>} : tensor<2x4x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16> -> tensor<2x4x100x64xf16>
  return %o, %oh : tensor<1x32x2048x128xbf16>, tensor<2x4x100x64xf16>
}
