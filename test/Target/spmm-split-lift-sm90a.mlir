// The split 6:8 lift on sm_90a (lift=auto above 16 tokens, or lift=split):
// sgpu-slide-sparse puts the windows in the order of tile_groups 16, where
// the 192 lifted columns of every 128 columns of X are those columns in
// place, then the 64 columns of their shared windows (window 1 of each
// group). A small kernel copies only the shared windows into W1 [M, K'/3];
// the TMA kernel runs over K' and loads each k-tile's B box from X (two of
// every three) or from W1 (the third): the tensor map is selected per
// k-tile, everything else is the plain kernel.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="sparse-policy=sparse output-dir=%t/auto" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROG < %t/auto/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/auto/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/auto/kernels.ptx -o %t/auto/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75
// RUN: sparse-opt %s --sgpu-compile="lift=split sparse-policy=sparse output-dir=%t/split" -o /dev/null
// RUN: cmp %t/auto/kernels.ptx %t/split/kernels.ptx
// RUN: sparse-opt %s --sgpu-slide-sparse="policy=sparse" -mlir-elide-elementsattrs-if-larger=4 | FileCheck %s --check-prefix=IR

// The weight (an argument: decomposed on the GPU in the same order) has
// K' = 1024 / 128 * 192 = 1536; W1 is 256 x 512.
// IR: sgpu.nm_decompose %{{.*}} {tile_groups = 16 : i64} : tensor<256x1024xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
// IR: sgpu.lift %{{.*}} {pattern = #sgpu.nm<6:8>, tile_groups = 16 : i64} : tensor<256x1024xf16> -> tensor<256x1536xf16>

// Four tensor maps: X in place (64-column boxes, 128B swizzle), the values,
// W1 (the same box), the metadata; a split-K grid at this size.
// PROG: launch sgpu_prepare_0
// PROG: launch sgpu_lift_0 grid 64 1 1 block 256 1 1 smem 0 pdl args b0 [[W1:b[0-9]+]]
// PROG-NEXT: launch sgpu_spmm_0 {{.*}} args tmap:b0:f16:256x1024:64x64:128 tmap:b2:f16:256x768:128x32:64 tmap:[[W1]]:f16:256x512:64x64:128 tmap:b3:i32:16x768:8x32:0

// The lift kernel: per thread two chunks of W1, i.e. window 1 of two groups
// (X columns 8g+2 .. 8g+5: bytes 4 and 8 of one 16-byte chunk of the row
// and of the next), one 16-byte store; no selects, as K is a multiple of 128.
// PTX-LABEL: .visible .entry sgpu_prepare_0(
// PTX-LABEL: .visible .entry sgpu_spmm_0(
// The consumers: the plain kernel's two sparse wgmmas per k-tile (no
// `ready` barrier, no gather); the producer selects, per k-tile, the map of
// X or of W1 for the B box.
// PTX: setmaxnreg.inc.sync.aligned.u32 232;
// PTX-COUNT-2: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// PTX: setmaxnreg.dec.sync.aligned.u32 40;
// PTX: selp.b64 [[MAP:%rd[0-9]+]], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p{{[0-9]+}};
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [[[MAP]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// PTX-LABEL: .visible .entry sgpu_lift_0(
// PTX-NOT: selp.b32
// PTX: ld.global.b32 %r{{[0-9]+}}, [[[SRC:%rd[0-9]+]]+4];
// PTX-NEXT: ld.global.b32 %r{{[0-9]+}}, [[[SRC]]+8];
// PTX-NEXT: ld.global.b32 %r{{[0-9]+}}, [[[SRC]]+20];
// PTX-NEXT: ld.global.b32 %r{{[0-9]+}}, [[[SRC]]+24];
// PTX-NOT: selp.b32
// PTX: st.global.v4.b32

// PTXAS: Compiling entry function 'sgpu_spmm_0' for 'sm_90a'
// PTXAS-NEXT: Function properties for sgpu_spmm_0
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @linear(%x: tensor<256x1024xf16>, %w: tensor<256x1024xf16, #sgpu.nm<6:8>>) -> tensor<256x256xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<256x256xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<256x256xf16>) -> tensor<256x256xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<256x1024xf16>, tensor<256x1024xf16, #sgpu.nm<6:8>>)
      outs(%acc : tensor<256x256xf16>) -> tensor<256x256xf16>
  return %y : tensor<256x256xf16>
}
