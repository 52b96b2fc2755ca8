// TwELL FFNs (ungated and gated, f16 and bf16) through sgpu-sparsify-ffn and
// the whole pipeline: the down projection Wd is a param, transposed once by
// a prepare-stage kernel (16 x 16 tiles of 32 x 32 for d = 256, F = 1024);
// at every run the program clears the fallback-row count, packs the ReLU
// output (one block per row: 64 rows, F = 1024 in 4 tiles of 256, one warp
// per tile) and runs the consumer (one block per token, 128 threads: 32
// vectors of 8 features for d = 256, at least 4 warps for the gated dot
// products), and ptxas assembles every kernel for sm_90a without spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/uf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/uf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/uf16/kernels.ptx -o %t/uf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/ubf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/ubf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/ubf16/kernels.ptx -o %t/ubf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/gf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/gf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/gf16/kernels.ptx -o %t/gf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/gbf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/gbf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/gbf16/kernels.ptx -o %t/gbf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: FileCheck %s --check-prefix=PTX < %t/gbf16/kernels.ptx
// The default form (the pack fused into the consumer, which reads H) assembles too.
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="output-dir=%t/fromh" -o /dev/null
// RUN: FileCheck %s --check-prefix=FROMH < %t/fromh/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/fromh/kernels.ptx -o %t/fromh.cubin 2>&1 | FileCheck %s --check-prefix=FROMHPTXAS
// FROMH-NOT: sgpu_twell_pack
// FROMH: launch sgpu_twell_clear_0
// FROMH-NOT: sgpu_twell_pack
// FROMH: launch sgpu_twell_ffn_0
// FROMHPTXAS: Compiling entry function 'sgpu_twell_ffn_0' for 'sm_90a'
// FROMHPTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// PROGRAM: buffer [[WD:[0-9]+]] param 0 524288
// The pack's counters are program stats: fallback rows of M = 64, nonzeros
// of M * F = 65536 with the layer's break-even density as the limit.
// PROGRAM: buffer [[ROWSID:[0-9]+]] temp 4
// PROGRAM-NEXT: stat twell0.fallback_rows b[[ROWSID]] u32 of 64
// PROGRAM-NEXT: buffer [[ACTID:[0-9]+]] temp 8
// PROGRAM-NEXT: stat twell0.active_neurons b[[ACTID]] u64 of 65536 limit {{[0-9]\.[0-9]+e[-+][0-9]+$}}
// PROGRAM: stage prepare
// PROGRAM-NEXT: launch sgpu_twell_down_t_0 grid 256 1 1 block 256 1 1 smem 0 args b[[WD]] [[WDT:b[0-9]+]]
// PROGRAM-NEXT: stage run
// PROGRAM: launch sgpu_twell_clear_0 grid 1 1 1 block 1 1 1 smem 0 pdl args [[ROWS:b[0-9]+]]
// PROGRAM: launch sgpu_twell_pack_0 grid 64 1 1 block 128 1 1 smem 0 pdl args {{.*}} [[ROWS]]
// PROGRAM: launch sgpu_twell_ffn_0 grid 64 1 1 block 128 1 1 smem 0 pdl args {{.*}} [[WDT]]
// PROGRAM-NOT: error

// SM90A-DAG: Compiling entry function 'sgpu_twell_clear_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_pack_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_ffn_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_down_t_0' for 'sm_90a'
// SM90A-NOT: bytes spill stores{{.*}}[1-9]

// The PTX of the gated bf16 program.
// Pack: each lane reads 8 columns of H with one 16-byte load; a warp scan
// (5 shuffles up, the total from lane 31) places the entries; the row's
// count goes through shared memory, one global atomic per row for each
// counter (fallback rows u32, nonzeros u64); an overflowed row is copied to
// the fallback 16 bytes at a time.
// PTX-LABEL: .entry sgpu_twell_pack_0(
// PTX: ld.global.v4.b32
// PTX-COUNT-5: shfl.sync.up.b32
// PTX: shfl.sync.idx.b32 {{.*}}, 31, 31, -1;
// PTX: atom.shared.add.u32
// PTX: bar.sync 0;
// PTX: atom.global.add.u32
// PTX: atom.global.add.u64
// PTX: ld.global.v4.b32
// PTX-NEXT: st.global.v4.b32
// PTX-LABEL: .entry sgpu_twell_down_t_0(
// Consumer: every warp scans the tile counts (5 shuffles up) and takes
// each tile's count and first place from its lane (2 shuffles idx); the
// gated dot product reads Wu[j] and X[m] 16 bytes per lane and reduces with
// 5 butterfly shuffles; the accumulation reads 4 WdT rows (16 bytes per
// thread each) before its FMAs; one 16-byte store per output vector.
// PTX-LABEL: .entry sgpu_twell_ffn_0(
// PTX-COUNT-5: shfl.sync.up.b32
// PTX-COUNT-2: shfl.sync.idx.b32
// PTX: ld.global.v4.b32
// PTX: ld.global.v4.b32
// PTX-COUNT-5: shfl.sync.bfly.b32
// PTX: bar.sync 0;
// PTX-COUNT-4: ld.global.v4.b32
// PTX: fma.rn.f32
// PTX: st.global.v4.b32
