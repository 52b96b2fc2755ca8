// The generated lift kernel (LiftToGPU.cpp) through the whole pipeline:
// with an even K each thread writes two 4-column chunks (one 16-byte
// st.global.v4.b32) from four 32-bit loads, in the tiled and the plain
// window order; with no source column past K there are no selects. A
// lifted pitch that is only a multiple of 4 (K' = 204) gives one chunk per
// thread (st.global.v2.b32), and K = 130 (not a multiple of 8) selects
// zeros for the words past K. An odd K keeps one thread per element
// (ld/st.global.b16). ptxas assembles all four for sm_90a without spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// 64 x 6144 / 8 = 49152 threads; 7 x 204 / 4 = 357; 5 x 60 = 300.
// PROGRAM: launch sgpu_lift_0 grid 192 1 1 block 256 1 1
// PROGRAM: launch sgpu_lift_1 grid 192 1 1 block 256 1 1
// PROGRAM: launch sgpu_lift_2 grid 2 1 1 block 256 1 1
// PROGRAM: launch sgpu_lift_3 grid 2 1 1 block 256 1 1

// PTX-LABEL: .visible .entry sgpu_lift_0(
// PTX-NOT: selp.b32
// PTX-COUNT-4: ld.global.b32
// PTX-NOT: selp.b32
// PTX: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX-NEXT: $L__BB0_2:
// PTX-LABEL: .visible .entry sgpu_lift_1(
// PTX-NOT: selp.b32
// PTX-COUNT-4: ld.global.b32
// PTX-NOT: selp.b32
// PTX: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX-NEXT: $L__BB1_2:
// PTX-LABEL: .visible .entry sgpu_lift_2(
// PTX: ld.global.b32
// PTX: selp.b32
// PTX: ld.global.b32
// PTX: selp.b32
// PTX-NOT: ld.global
// PTX: st.global.v2.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX-LABEL: .visible .entry sgpu_lift_3(
// PTX-NOT: ld.global.b32
// PTX: ld.global.b16
// PTX: selp.b16
// PTX: st.global.b16
// PTX-NOT: st.global

// PTXAS-COUNT-4: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @lifts(%x: tensor<64x4096xf16>, %s: tensor<7x130xbf16>, %o: tensor<5x37xf16>)
    -> (tensor<64x6144xf16>, tensor<64x6144xf16>, tensor<7x204xbf16>, tensor<5x60xf16>) {
  %t = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<64x4096xf16> -> tensor<64x6144xf16>
  %p = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<64x4096xf16> -> tensor<64x6144xf16>
  %st = sgpu.lift %s {pattern = #sgpu.nm<6:8>} : tensor<7x130xbf16> -> tensor<7x204xbf16>
  %od = sgpu.lift %o {pattern = #sgpu.nm<6:8>} : tensor<5x37xf16> -> tensor<5x60xf16>
  return %t, %p, %st, %od : tensor<64x6144xf16>, tensor<64x6144xf16>, tensor<7x204xbf16>, tensor<5x60xf16>
}
