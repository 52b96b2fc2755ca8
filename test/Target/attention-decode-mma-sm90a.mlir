// The decode attention's default split kernel on sm_90a, the tensor-core
// one, through the whole pipeline at the Llama-3-8B shape, batch 8 over a
// cache of 4096 positions: 32 mma.sync per 16-key tile (16 for S, 16 for
// P V) from 20 16-byte loads (4 of the query, 8 of K, 8 of V), every
// exponential one ex2.approx.f32, and ptxas fits three blocks of 128
// threads per multiprocessor (.minnctapersm 3, at most 168 registers)
// without spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %s --sgpu-compile="output-dir=%t/a" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/a/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/a/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/a/kernels.ptx -o %t/a.cubin > %t/a.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t/a.log

// One wave: 8 sequences x 8 key/value heads x 6 splits = 384 blocks of
// three per multiprocessor (132 on the H200).
// PROGRAM: launch sgpu_attention_split_mma_0 grid 384 1 1 block 128 1 1
// PROGRAM: launch sgpu_attention_combine_0 grid 128 1 1 block 256 1 1

// PTX-LABEL: .entry sgpu_attention_split_mma_0
// PTX: .minnctapersm 3
// PTX-COUNT-4: ld.global.v4.b32
// PTX-COUNT-16: ld.global.v4.b32
// PTX-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: ex2.approx.ftz.f32
// PTX: ex2.approx.f32
// PTX-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: mma.sync
// PTX-LABEL: .entry sgpu_attention_combine_0

// PTXAS-DAG: Function properties for sgpu_attention_split_mma_0
// PTXAS-DAG: Used {{([0-9]|[0-9][0-9]|1[0-5][0-9]|16[0-8])}} registers, used 1 barriers
// PTXAS-DAG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @decode(%q: tensor<8x32x1x128xbf16>, %k: tensor<8x8x4096x128xbf16>, %v: tensor<8x8x4096x128xbf16>, %pos: tensor<8x1xi64>) -> tensor<8x32x1x128xbf16> {
  %o = sgpu.attention %q, %k, %v positions(%pos : tensor<8x1xi64>) {causal, scale = 8.838834764e-02 : f32} : tensor<8x32x1x128xbf16>, tensor<8x8x4096x128xbf16>, tensor<8x8x4096x128xbf16> -> tensor<8x32x1x128xbf16>
  return %o : tensor<8x32x1x128xbf16>
}
