// A chip or PTX ISA that cannot express the sparse MMA is a diagnostic, not a
// backend crash.
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="chip=sm_75" 2>&1 | FileCheck %s --check-prefix=SM75
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="chip=sm_90a features=+ptx80" 2>&1 | FileCheck %s --check-prefix=PTX80
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="chip=gfx942" 2>&1 | FileCheck %s --check-prefix=BADCHIP
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="features=+ptx95" 2>&1 | FileCheck %s --check-prefix=NEWPTX
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="features=+sm90" 2>&1 | FileCheck %s --check-prefix=BADFEAT
// RUN: not sparse-opt %s --sgpu-compile="chip=sm_70" 2>&1 | FileCheck %s --check-prefix=PIPE

// SM75: error: sgpu.spmm needs sparse tensor cores (mma.sp, sm_80 or newer); chip 'sm_75' has none
// PTX80: error: sgpu.spmm uses mma.sp::ordered_metadata, which needs PTX ISA 8.5; features '+ptx80' give PTX ISA 8.0 (use features=+ptx85 or later)
// BADCHIP: error: chip 'gfx942' is not of the form sm_<NN>[a]
// NEWPTX: error: PTX ISA feature '+ptx95' is outside what the NVPTX backend emits (+ptx60 .. +ptx88)
// BADFEAT: error: unsupported target feature '+sm90'; expected +ptx<NN> (e.g. +ptx85)
// PIPE: error: sgpu.spmm needs sparse tensor cores (mma.sp, sm_80 or newer); chip 'sm_70' has none
func.func @spmm(%x: tensor<8x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>) -> tensor<8x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
