// TwELL FFNs (ungated and gated, f16 and bf16) after sgpu-sparsify-ffn, run
// on the GPU through the runtime with rows from ~0.5% to 100% active (the
// dense ones overflow into the fallback), match a dense numpy FFN, and the
// program stats (nonzeros, fallback rows) match numpy's gate output. The
// first programs run the pack kernel (twell-pack=kernel); the default, the
// pack fused into the consumer, has its own lines below (--no-capacity).
// REQUIRES: gpu
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/uf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/uf16 %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/gf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/gf16 %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/ubf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/ubf16 %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/gbf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/gbf16 %sparse_opt_lib | FileCheck %s
// The same FFNs with the fused producer (twell-producer=fused: the gate GEMM
// a generated wgmma kernel whose epilogue packs, then the fallback
// fix-up), and a shape with a partial token block, a K tail and a partial
// last tile (M = 200, d = 200, F = 600).
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/fused-twell-ffn-ungated-f16" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-twell-ffn-ungated-f16 %sparse_opt_lib --tile 256 | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-f16.mlir --sgpu-sparsify-ffn="tile=128 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/fused-twell-ffn-gated-f16" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-twell-ffn-gated-f16 %sparse_opt_lib --tile 128 | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/fused-twell-ffn-ungated-bf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-twell-ffn-ungated-bf16 %sparse_opt_lib --tile 256 | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/fused-twell-ffn-gated-bf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-twell-ffn-gated-bf16 %sparse_opt_lib --tile 256 | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/fused-twell-ffn-gated-bf16-odd" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-twell-ffn-gated-bf16-odd %sparse_opt_lib --tile 256 | FileCheck %s
// The fused producer in clusters of two (the two token blocks of M = 200
// share W's tile by TMA multicast).
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-producer=fused cluster=2 output-dir=%t/fused-cluster" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-cluster %sparse_opt_lib | FileCheck %s
// A bias on the first linear and tile 64, M = 17000: 133 token blocks, so the
// persistent producer walks several tiles per block; both producers.
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-pack=kernel output-dir=%t/bias" -o /dev/null
// RUN: %python %S/check_twell.py %t/bias %sparse_opt_lib --tile 64 | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-producer=fused output-dir=%t/fused-bias" -o /dev/null
// RUN: %python %S/check_twell.py %t/fused-bias %sparse_opt_lib --tile 64 | FileCheck %s
// The tensor-core consumer (twell-consumer=tensor-cores: the block pack,
// then the gathered up and down GEMMs) on the same FFNs, the odd shape
// (partial blocks of rows, a K tail, F padded) and the biased FFN at
// M = 17000 (266 blocks of 64 rows: the persistent GEMMs walk several
// tiles per block); the block form has no capacity, so no row falls back.
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-uf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-uf16 %sparse_opt_lib --block-form | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-gf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-gf16 %sparse_opt_lib --block-form | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-ubf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-ubf16 %sparse_opt_lib --block-form | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-gbf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-gbf16 %sparse_opt_lib --block-form | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-odd" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-odd %sparse_opt_lib --block-form | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-bias" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-bias %sparse_opt_lib --tile 64 --block-form | FileCheck %s
// The CUDA-core consumer in passes over the neurons (twell-passes: the f32
// partial sums between passes; the dense rows' fallback columns split by
// pass too), and two gated consumers of one pack on both consumers (the
// tensor cores' up GEMM then writes its own P).
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-passes=3 output-dir=%t/p3-gbf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/p3-gbf16 %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-passes=2 output-dir=%t/p2-uf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/p2-uf16 %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-passes=3 output-dir=%t/p3-odd" -o /dev/null
// RUN: %python %S/check_twell.py %t/p3-odd %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-passes=2 output-dir=%t/p2-bias" -o /dev/null
// RUN: %python %S/check_twell.py %t/p2-bias %sparse_opt_lib --tile 64 | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-shared.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="output-dir=%t/shared" -o /dev/null
// RUN: %python %S/check_twell.py %t/shared %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-shared.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-consumer=tensor-cores output-dir=%t/tc-shared" -o /dev/null
// RUN: %python %S/check_twell.py %t/tc-shared %sparse_opt_lib --block-form | FileCheck %s
// The pack fused into the consumer (twell-pack=consumer: the consumer
// scans H itself; the dense rows' many entries take several stages).
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=consumer output-dir=%t/pc-gbf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/pc-gbf16 %sparse_opt_lib --no-capacity | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=consumer output-dir=%t/pc-uf16" -o /dev/null
// RUN: %python %S/check_twell.py %t/pc-uf16 %sparse_opt_lib --no-capacity | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-gated-bf16-odd.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="twell-pack=consumer output-dir=%t/pc-odd" -o /dev/null
// RUN: %python %S/check_twell.py %t/pc-odd %sparse_opt_lib --no-capacity | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/twell-ffn-ungated-bf16-bias.mlir --sgpu-sparsify-ffn="tile=64 compression=4" --sgpu-compile="twell-pack=consumer output-dir=%t/pc-bias" -o /dev/null
// RUN: %python %S/check_twell.py %t/pc-bias %sparse_opt_lib --tile 64 --no-capacity | FileCheck %s
// CHECK: stats: active neurons {{[0-9]+}} (numpy {{[0-9]+}}), fallback rows {{[0-9]+}} (numpy {{[0-9]+}}) (ok)
// CHECK: twell {{.*}} max_rel_err {{.*}} (ok)
