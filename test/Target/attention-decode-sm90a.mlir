// The decode attention's CUDA-core split kernel (by configuration; the
// default is attention-decode-mma-sm90a.mlir's) through the whole pipeline at the
// Llama-3-8B shape, batch 8 over a cache of 4096 positions: the softmax
// works in base 2, so every exponential is one ex2.approx.f32 (no
// libdevice expf, whose sequence ends in ex2.approx.ftz), the dot products
// and accumulators are fma.rn.f32, and ptxas fits two blocks of 256
// threads per multiprocessor (.minnctapersm 2, at most 128 registers)
// without spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %s --sgpu-compile="output-dir=%t/a" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/a/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/a/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/a/kernels.ptx -o %t/a.cubin > %t/a.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t/a.log

// One wave: 8 sequences x 8 key/value heads x 4 splits = 256 blocks of
// two per multiprocessor (132 on the H200).
// PROGRAM: launch sgpu_attention_split_0 grid 256 1 1 block 256 1 1
// PROGRAM: launch sgpu_attention_combine_0 grid 128 1 1 block 256 1 1

// PTX-LABEL: .entry sgpu_attention_split_0
// PTX: .minnctapersm 2
// PTX-NOT: ex2.approx.ftz.f32
// PTX: fma.rn.f32
// PTX-NOT: ex2.approx.ftz.f32
// PTX: ex2.approx.f32
// PTX-NOT: ex2.approx.ftz.f32
// PTX-LABEL: .entry sgpu_attention_combine_0
// PTX-NOT: ex2.approx.ftz.f32
// PTX: ex2.approx.f32

// PTXAS-DAG: Function properties for sgpu_attention_split_0
// PTXAS-DAG: Used {{([0-9]|[0-9][0-9]|1[01][0-9]|12[0-8])}} registers, used 1 barriers
// PTXAS-DAG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @decode(%q: tensor<8x32x1x128xbf16>, %k: tensor<8x8x4096x128xbf16>, %v: tensor<8x8x4096x128xbf16>, %pos: tensor<8x1xi64>) -> tensor<8x32x1x128xbf16> {
  %o = sgpu.attention %q, %k, %v positions(%pos : tensor<8x1xi64>) {causal, scale = 8.838834764e-02 : f32, sgpu.config = #sgpu.attention_config<kernel = decode>} : tensor<8x32x1x128xbf16>, tensor<8x8x4096x128xbf16>, tensor<8x8x4096x128xbf16> -> tensor<8x32x1x128xbf16>
  return %o : tensor<8x32x1x128xbf16>
}
