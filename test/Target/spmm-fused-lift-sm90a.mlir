// The 6:8 lift inside the sm_90a TMA kernel (lift=fused): the weight is
// decomposed in the tiled window order (tile_groups = 8), the kernel reads
// X [M, K] itself through its tensor map, loads 64 columns per stage (k32
// steps 0 and 1 in place) and the producer warps 1..3 gather the 32 shared
// window columns of step 2 into shared memory: no lift kernel and no lifted
// copy of X in memory. Above 16 tokens lift=auto takes the split lift
// instead (spmm-split-lift-sm90a.mlir); lift=separate keeps the plain order
// and the gather kernel.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="lift=fused sparse-policy=sparse output-dir=%t/fused" -o /dev/null
// RUN: FileCheck %s --check-prefix=FUSED < %t/fused/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/fused/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/fused/kernels.ptx -o %t/fused/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75
// RUN: sparse-opt %s --sgpu-compile="lift=separate sparse-policy=sparse output-dir=%t/sep" -o /dev/null
// RUN: FileCheck %s --check-prefix=GATHER < %t/sep/program.txt
// RUN: FileCheck %s --check-prefix=GATHERPTX < %t/sep/kernels.ptx
// RUN: sparse-opt %s --sgpu-slide-sparse="policy=sparse lift=fused" -mlir-elide-elementsattrs-if-larger=4 | FileCheck %s --check-prefix=IR
// RUN: not sparse-opt %s --sgpu-compile="lift=inline" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADLIFT

// FUSED-NOT: sgpu_lift
// FUSED: launch sgpu_spmm_0 {{.*}} args tmap:b0:f16:256x1024:64x64:128 tmap:b2:f16:256x768:128x32:64 tmap:b2:f16:256x768:128x16:32 tmap:b3:i32:16x768:8x48:0
// FUSED-NOT: sgpu_lift

// The weight in tiled order: K' = 1024 / 64 * 96 = 1536.
// IR: sgpu.nm_decompose %{{.*}} {tile_groups = 8 : i64} : tensor<256x1024xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
// IR: sgpu.lift %{{.*}} {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<256x1024xf16> -> tensor<256x1536xf16>

// GATHER: launch sgpu_lift_0
// GATHER: launch sgpu_spmm_0 {{.*}} args tmap:b5:f16:256x1536:64x64:128 tmap:b2:f16:256x768:128x32:64 tmap:b3:i32:16x768:8x32:0
// The gather kernel (either window order): per thread two 4-column chunks,
// four 32-bit loads and one 16-byte store; no selects, as every lifted
// column copies a column below K (LiftToGPU.cpp).
// GATHERPTX-LABEL: .visible .entry sgpu_lift_0(
// GATHERPTX-NOT: selp.b32
// GATHERPTX-COUNT-4: ld.global.b32
// GATHERPTX-NOT: selp.b32
// GATHERPTX: st.global.v4.b32

// BADLIFT: unknown sgpu-slide-sparse lift 'inline'; expected auto, fused, split or separate

// Consumers: per stage the full and the ready barrier, three metadata words
// and three sparse wgmmas (the third on the gathered columns).
// PTX: setmaxnreg.inc.sync.aligned.u32 224;
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: ld.shared.b32
// PTX: ld.shared.b32
// PTX: ld.shared.b32
// PTX-COUNT-3: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// PTX: wgmma.commit_group.sync.aligned;
// Producer: one thread issues four TMA loads per stage (values of steps 0-1,
// values of step 2, X, metadata); warps 1..3 gather words 1 and 2 of every
// 16-byte chunk of X into the step-2 operand, then fence and arrive.
// PTX: setmaxnreg.dec.sync.aligned.u32 56;
// PTX-COUNT-4: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX: ld.shared.v4.b32 {t0, t1, t2, t3}, [%r{{[0-9]+}}+0];
// PTX: ld.shared.v4.b32 {t4, t5, t6, t7}, [%r{{[0-9]+}}+0];
// PTX: st.shared.v4.b32 [%r{{[0-9]+}}+0], {t1, t2, t5, t6};
// PTX: fence.proxy.async.shared::cta;
// PTX: mbarrier.arrive.shared::cta.b64

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
