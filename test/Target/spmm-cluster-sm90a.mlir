// The TMA spmm kernel in clusters of two (cluster=2) down to PTX and
// ptxas: the kernel declares its cluster shape, the producer multicasts
// its half of the X tile into both blocks (a 16-bit CTA mask), consumers
// release each stage locally and in the peer block (mapa + a remote
// arrival), and cluster barriers bracket the kernel.
// ptxas assembles it for sm_90a without spills or wgmma serialization.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="kernel=wgmma tile-n=256 split-k=1 cluster=2 output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75

// 2 token blocks x 2 feature blocks (split-k=1: no split-K, which clusters
// do not combine with): 2 clusters of 2; X's box is half a
// 256-token tile.
// PROGRAM: launch sgpu_spmm_0 grid 4 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:f16:512x1024:128x64:128 tmap:b1:f16:256x512:128x32:64

// PTX-LABEL: .entry sgpu_spmm_0(
// PTX: .explicitcluster
// PTX-NEXT: .reqnctapercluster 2, 1, 1
// PTX: mov.u32 {{.*}}, %cluster_ctarank;
// PTX: barrier.cluster.arrive.aligned;
// PTX-NEXT: barrier.cluster.wait.aligned;
// PTX: wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16
// PTX: mbarrier.arrive.shared::cta.b64
// PTX: mapa.shared::cluster.u32
// PTX-NEXT: mbarrier.arrive.shared::cluster.b64 _, [remote];
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{{.*}}], [{{.*}}], [{{.*}}], %rs{{[0-9]+}};
// PTX: barrier.cluster.arrive.aligned;
// PTX-NEXT: barrier.cluster.wait.aligned;
// PTX: ret;

// PTXAS: Compiling entry function 'sgpu_spmm_0' for 'sm_90a'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @forward(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}
