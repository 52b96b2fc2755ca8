// The fused TwELL producer (twell-producer=fused) through sgpu-sparsify-ffn
// and the whole pipeline: the gate GEMM is a generated TMA + wgmma kernel
// whose epilogue packs H, so the program has no cuBLASLt gemm line and no
// pack kernel; the clear kernel runs before it and the fallback fix-up
// after it, then the consumer. ptxas assembles every kernel for sm_90a
// without spills or wgmma serialization warnings (C75xx). The default
// (auto) keeps the library GEMM and the pack kernel.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/gbf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/gbf16/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/gbf16/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/gbf16/kernels.ptx -o %t/gbf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/odd" -o /dev/null
// RUN: FileCheck %s --check-prefix=ODD < %t/odd/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/odd/kernels.ptx -o %t/odd.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=128 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/uf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=UF16 < %t/uf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/uf16/kernels.ptx -o %t/uf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/bias" -o /dev/null
// RUN: FileCheck %s --check-prefix=BIAS < %t/bias/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/bias/kernels.ptx -o %t/bias.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused cluster=2 output-dir=%t/cluster" -o /dev/null
// RUN: FileCheck %s --check-prefix=CLUSTER < %t/cluster/program.txt
// RUN: FileCheck %s --check-prefix=CLUSTERPTX < %t/cluster/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/cluster/kernels.ptx -o %t/cluster.cubin 2>&1 | FileCheck %s --check-prefix=SM90A --implicit-check-not=C75
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-producer=fused cluster=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPAIR
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/auto" -o /dev/null
// RUN: FileCheck %s --check-prefix=AUTO < %t/auto/program.txt
// RUN: not sparse-opt %S/Inputs/twell-ffn-gated-bf16.mlir --sgpu-compile="twell-producer=cublas" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// M = 64, d = 256, F = 1024: one token block, 4 feature blocks; X and Wg
// through 128B-swizzled tensor maps (boxes 128 x 64 and 256 x 64).
// PROGRAM-NOT: gemm
// PROGRAM: launch sgpu_twell_clear_0 grid 1 1 1 block 256 1 1 smem 0 pdl args [[ROWS:b[0-9]+]] [[ACT:b[0-9]+]] [[FLAGS:b[0-9]+]]
// PROGRAM-NEXT: launch sgpu_twell_producer_0 grid 4 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:bf16:64x256:128x64:128 tmap:b1:bf16:1024x256:256x64:128 [[WORDS:b[0-9]+]] [[FLAGS]] [[FB:b[0-9]+]] [[ROWS]] [[ACT]]
// PROGRAM-NEXT: launch sgpu_twell_fixup_0 grid 8 1 1 block 256 1 1 smem 0 pdl args [[WORDS]] [[FLAGS]] [[FB]]
// PROGRAM-NEXT: launch sgpu_twell_ffn_0 grid 64 1 1 block 128 1 1 smem 0 pdl args [[WORDS]] [[FLAGS]] [[FB]]
// PROGRAM-NOT: sgpu_twell_pack
// PROGRAM-NOT: gemm

// M = 200, d = 200, F = 600: 2 token blocks x 3 feature blocks; 25 fix-up
// blocks of 8 rows.
// ODD: launch sgpu_twell_producer_0 grid 6 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:bf16:200x200:128x64:128 tmap:b1:bf16:600x200:256x64:128
// ODD-NEXT: launch sgpu_twell_fixup_0 grid 25 1 1

// Tile 128 (two tiles per 256-feature block), f16.
// UF16-NOT: gemm
// UF16: launch sgpu_twell_producer_0 grid 4 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:f16:64x256:128x64:128 tmap:b1:f16:1024x256:256x64:128

// A bias (the first linear's, fused into the GEMM: the producer reads it),
// tile 64, M = 17000: 133 token blocks x 2 feature blocks, 266 tiles on a
// persistent grid that the runtime sizes (132 blocks on an H200); K = 64 is
// one stage.
// BIAS-NOT: gemm
// BIAS: launch sgpu_twell_producer_0 grid persistent:266:1:0 1 1 block 384 1 1 smem 50192 pdl args tmap:b0:bf16:17000x64:128x64:128 tmap:b1:bf16:320x64:256x64:128 b2 {{.*}}
// BIAS-NOT: sgpu_twell_pack

// cluster=2: the two token blocks of M = 200 pair up and share W's tile
// (each loads half of the 256-row box and multicasts it); M = 17000 has
// 133 token blocks, which do not pair: a remark, and single blocks.
// CLUSTER: launch sgpu_twell_producer_0 grid 6 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:bf16:200x200:128x64:128 tmap:b1:bf16:600x200:128x64:128
// CLUSTERPTX-LABEL: .entry sgpu_twell_producer_0(
// CLUSTERPTX: .reqnctapercluster 2, 1, 1
// CLUSTERPTX: mbarrier.arrive.shared::cluster.b64
// CLUSTERPTX: complete_tx::bytes.multicast::cluster
// NOPAIR: remark: cluster=2 not used for the TwELL producer: the 133 blocks of 128 A rows do not pair up

// AUTO: gemm m=64 n=1024 k=256
// AUTO: launch sgpu_twell_pack_0
// AUTO-NOT: sgpu_twell_producer

// BAD: unknown twell-producer 'cublas'; expected auto, fused or library

// The producer kernel's PTX, consumer warpgroups first: registers raised
// to 232, four dense wgmmas per stage with one group in flight
// (wait_group 1, then 0 before the epilogue); the epilogue rounds to bf16,
// exchanges the quad's masks (8 index shuffles per row and tile), ranks the
// entries with 64-bit population counts, flags an overflowing row with an
// atomic or (the first setter counts it) and adds the warp's nonzero count
// with one 64-bit atomic after a 5-shuffle scan. Then the producer
// warpgroup: registers lowered to 40, TMA loads completing on mbarriers.
// PTX-LABEL: .entry sgpu_twell_producer_0(
// PTX: setmaxnreg.inc.sync.aligned.u32 232;
// PTX-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: cvt.rn.bf16.f32
// PTX-COUNT-8: shfl.sync.idx.b32
// PTX: popc.b64
// PTX: atom.global.or.b32
// PTX-NEXT: setp
// PTX: atom.global.add.u32
// PTX-COUNT-5: shfl.sync.up.b32
// PTX: atom.global.add.u64
// PTX: setmaxnreg.dec.sync.aligned.u32 40;
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: mbarrier.arrive.expect_tx.shared::cta.b64
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// The fix-up: one warp per row, zeros then (after the warp barrier) the
// entries of the tiles that fit.
// PTX-LABEL: .entry sgpu_twell_fixup_0(
// PTX: bar.warp.sync -1;

// SM90A-DAG: Compiling entry function 'sgpu_twell_clear_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_producer_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_fixup_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_ffn_0' for 'sm_90a'
// SM90A-NOT: bytes spill stores{{.*}}[1-9]
