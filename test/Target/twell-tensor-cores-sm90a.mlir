// The tensor-core TwELL consumer (twell-consumer=tensor-cores) through
// sgpu-sparsify-ffn and the whole pipeline: the library gate GEMM, then the
// block pack, the gathered up GEMM (gated) and the gathered down GEMM, each
// GEMM's A through a 128B-swizzled tensor map (box 64 x 64); no pack kernel
// and no CUDA-core consumer. The PTX has the cp.async gathers with their
// mbarrier arrivals, the proxy fence and the m64n128k16 wgmmas (MN-major B,
// imm-trans-b 1, in the down GEMM); ptxas assembles every kernel for sm_90a
// without spills or wgmma serialization warnings (C75xx).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/odd" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/odd/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/odd/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/odd/kernels.ptx -o %t/odd.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/uf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=UF16 < %t/uf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/uf16/kernels.ptx -o %t/uf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75

// M = 200, d = 200, F = 600: 4 blocks of 64 rows, F padded to 768 (3 column
// tiles of the up GEMM), one column tile of the down GEMM; H (b5) from the
// library GEMM; the union stat out of 4 x 600.
// PROGRAM: stat twell0.block_neurons {{b[0-9]+}} u64 of 2400
// PROGRAM: gemm m=200 n=600 k=200 in=bf16 out=bf16 x=b0 w=b1 y=[[H:b[0-9]+]] act=relu
// PROGRAM-NEXT: launch sgpu_twell_clear_0 grid 1 1 1 block 1 1 1 smem 0 pdl args [[ROWS:b[0-9]+]] [[ACT:b[0-9]+]] [[UNION:b[0-9]+]]
// PROGRAM-NEXT: launch sgpu_twell_blocks_0 grid 4 1 1 block 256 1 1 smem 0 pdl args [[H]] [[IDX:b[0-9]+]] [[COEF:b[0-9]+]] [[COUNT:b[0-9]+]] [[ACT]] [[UNION]]
// PROGRAM-NEXT: launch sgpu_twell_up_0 grid 12 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:bf16:200x200:64x64:128 b2 [[IDX]] [[COUNT]] [[COEF]] [[COEF]]
// PROGRAM-NEXT: launch sgpu_twell_down_0 grid 4 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:[[COEF]]:bf16:256x768:64x64:128 {{b[0-9]+}} [[IDX]] [[COUNT]] b{{[0-9]+}}
// PROGRAM-NOT: sgpu_twell_pack
// PROGRAM-NOT: sgpu_twell_ffn

// PTX-LABEL: .entry sgpu_twell_blocks_0
// PTX-DAG: atom.shared.or.b32
// PTX-DAG: popc.b32
// PTX-LABEL: .entry sgpu_twell_up_0
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: cp.async.mbarrier.arrive.noinc.shared::cta.b64
// PTX-DAG: fence.proxy.async.shared::cta;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 0, 0;
// PTX-LABEL: .entry sgpu_twell_down_0
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 0, 1;

// Ungated f16: the down GEMM reads the block pack's coef.
// UF16: launch sgpu_twell_blocks_0 grid 1 1 1 block 256 1 1 smem 0 pdl args b{{[0-9]+}} [[IDX:b[0-9]+]] [[COEF:b[0-9]+]] [[COUNT:b[0-9]+]]
// UF16-NEXT: launch sgpu_twell_down_0 grid 1 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:[[COEF]]:f16:64x1024:64x64:128
// UF16-NOT: sgpu_twell_up

// SM90A: 0 bytes spill stores, 0 bytes spill loads
