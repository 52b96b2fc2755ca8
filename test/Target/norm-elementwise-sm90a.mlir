// The normalization and element-wise kernels through the whole pipeline:
// the PTX text has the warp shuffles, the barrier between the warp sums,
// the correctly rounded 1 / sqrt and the rounding to the output type, math
// ops are linked from libdevice (nothing is left external), and ptxas
// assembles every kernel for sm_90a without spills. Then the pre-norm MLP
// block, in the importers' linalg form (the shipped example) and with sgpu
// ops, compiles to the same program: the norm kernel, two library GEMMs and
// the residual-add kernel.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %s --sgpu-compile="output-dir=%t/norms" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/norms/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/norms/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/norms/kernels.ptx -o %t/norms.cubin > %t/norms.log 2>&1
// RUN: FileCheck %s --check-prefix=SM90A < %t/norms.log
// RUN: FileCheck %s --check-prefix=SPILLS < %t/norms.log
// RUN: sparse-opt %sparse_opt_src/examples/rmsnorm_mlp_block.mlir --sgpu-compile="output-dir=%t/block" -o /dev/null
// RUN: FileCheck %s --check-prefix=BLOCK < %t/block/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/block/kernels.ptx -o %t/block.cubin 2>&1 | FileCheck %s --check-prefix=BLOCKSM90A
// RUN: %ptxas -arch=sm_90a -v %t/block/kernels.ptx -o %t/block.cubin 2>&1 | FileCheck %s --check-prefix=BLOCKSPILLS
// RUN: sparse-opt %S/Inputs/rmsnorm-mlp-block-sgpu.mlir --sgpu-compile="output-dir=%t/block-sgpu" -o /dev/null
// RUN: FileCheck %s --check-prefix=BLOCK < %t/block-sgpu/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/block-sgpu/kernels.ptx -o %t/block-sgpu.cubin 2>&1 | FileCheck %s --check-prefix=BLOCKSM90A

// One block per row, the row held in registers as 16-byte chunks: 16 rows
// of 4096 f16 (256 threads, two chunks each), 32 rows of 1024 bf16 (128
// threads, one chunk), 16 rows of 768 f32 (192 threads), 8 rows of 40 f16
// (one warp, 5 lanes with a chunk); the GELU has 320 elements, 8 per
// thread (1 block).
// PROGRAM: launch sgpu_rms_norm_0 grid 16 1 1 block 256 1 1 smem 0 pdl args b0 b1 [[Y0:b[0-9]+]]
// PROGRAM: launch sgpu_rms_norm_1 grid 32 1 1 block 128 1 1 smem 0 pdl args b2 b3 [[Y1:b[0-9]+]]
// PROGRAM: launch sgpu_layer_norm_0 grid 16 1 1 block 192 1 1 smem 0 pdl args b4 b5 b6 [[Y2:b[0-9]+]]
// PROGRAM: launch sgpu_layer_norm_1 grid 8 1 1 block 32 1 1 smem 0 pdl args b7 b8 b9 [[Y3:b[0-9]+]]
// PROGRAM: launch sgpu_elementwise_0 grid 1 1 1 block 256 1 1 smem 0 pdl args [[Y3]] [[Y4:b[0-9]+]]

// Both chunks of x and of w are loaded (16 bytes each, 4096 bytes apart)
// before the reduction starts; the output leaves in two 16-byte stores.
// PTX: .target sm_90a
// PTX-NOT: .extern
// PTX-LABEL: .entry sgpu_rms_norm_0(
// PTX: .maxntid 256, 1, 1
// PTX: .shared .align 4 .b8 [[SMEM:__wg_sgpu_rms_norm_0_[0-9]+]][32];
// PTX: ld.global.v4.b32 {{.*}}, [[[XP:%rd[0-9]+]]];
// PTX: cvt.f32.f16
// PTX: ld.global.v4.b32 {{.*}}, [[[XP]]+4096];
// PTX: ld.global.v4.b32 {{.*}}, [[[WP:%rd[0-9]+]]];
// PTX: ld.global.v4.b32 {{.*}}, [[[WP]]+4096];
// PTX-COUNT-5: shfl.sync.bfly.b32
// PTX: st.shared.b32
// PTX: bar.sync 0;
// PTX: ld.shared.b32
// PTX-COUNT-5: shfl.sync.bfly.b32
// PTX: sqrt.rn.f32
// PTX: rcp.rn.f32
// PTX: cvt.rn.f16x2.f32
// PTX: st.global.v4.b32 [[[YP:%rd[0-9]+]]],
// PTX: st.global.v4.b32 [[[YP]]+4096],
// PTX-NOT: ld.global
// PTX-LABEL: .entry sgpu_rms_norm_1(
// PTX: .maxntid 128, 1, 1
// PTX: ld.global.v4.b32
// PTX: cvt.f32.bf16
// PTX: sqrt.rn.f32
// PTX: rcp.rn.f32
// PTX: cvt.rn.bf16x2.f32
// PTX: st.global.v4.b32
// PTX-LABEL: .entry sgpu_layer_norm_0(
// PTX: .maxntid 192, 1, 1
// PTX: .shared .align 4 .b8 {{.*}}[48];
// PTX-COUNT-2: bar.sync 0;
// PTX: sqrt.rn.f32
// PTX: rcp.rn.f32
// PTX: st.global.v4.b32
// The ragged row: lanes 5..31 skip their store.
// PTX-LABEL: .entry sgpu_layer_norm_1(
// PTX: .maxntid 32, 1, 1
// PTX-NOT: bar.sync
// PTX: setp.gt.u32
// PTX: st.global.v4.b32
// PTX-LABEL: .entry sgpu_elementwise_0(
// PTX: .maxntid 256, 1, 1
// PTX: ld.global.v4.b32
// PTX: ex2.approx
// PTX: cvt.rn.f16x2.f32
// PTX: st.global.v4.b32

// SM90A-DAG: Compiling entry function 'sgpu_rms_norm_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_rms_norm_1' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_layer_norm_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_layer_norm_1' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_elementwise_0' for 'sm_90a'
// SPILLS-COUNT-5: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SPILLS-NOT: bytes spill stores

// BLOCK: sparseopt-program 4
// BLOCK-NEXT: # host function @block
// BLOCK-NEXT: module kernels.ptx
// BLOCK-NEXT: buffer 0 input 0 8192
// BLOCK-NEXT: buffer 1 input 1 512
// BLOCK-NEXT: buffer 2 input 2 262144
// BLOCK-NEXT: buffer 3 input 3 262144
// The temporaries share an arena by liveness: the norm's output is dead
// once the first GEMM has read it, so the second GEMM's output takes its
// bytes.
// BLOCK-NEXT: arena 24576
// BLOCK-NEXT: buffer 4 temp 8192 arena 0
// BLOCK-NEXT: launch sgpu_rms_norm_0 grid 16 1 1 block 32 1 1 smem 0 pdl args b0 b1 b4
// BLOCK-NEXT: buffer 5 temp 16384 arena 8192
// BLOCK-NEXT: gemm m=16 n=512 k=256 in=f16 out=f16 x=b4 w=b2 y=b5 act=relu
// BLOCK-NEXT: buffer 6 temp 8192 arena 0
// BLOCK-NEXT: gemm m=16 n=256 k=512 in=f16 out=f16 x=b5 w=b3 y=b6
// BLOCK-NEXT: buffer 7 output 0 8192
// BLOCK-NEXT: launch sgpu_elementwise_0 grid 2 1 1 block 256 1 1 smem 0 pdl args b0 b6 b7
// BLOCK-NEXT: end
// BLOCK-NOT: {{.}}
// BLOCKSM90A-DAG: Compiling entry function 'sgpu_rms_norm_0' for 'sm_90a'
// BLOCKSM90A-DAG: Compiling entry function 'sgpu_elementwise_0' for 'sm_90a'
// BLOCKSPILLS-COUNT-2: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// BLOCKSPILLS-NOT: bytes spill stores

func.func @norms(%x: tensor<2x8x4096xf16>, %w: tensor<4096xf16>,
                 %xb: tensor<32x1024xbf16>, %wb: tensor<1024xbf16>,
                 %xl: tensor<16x768xf32>, %wl: tensor<768xf32>, %bl: tensor<768xf32>,
                 %xs: tensor<8x40xf16>, %ws: tensor<40xf16>, %bs: tensor<40xf16>)
    -> (tensor<2x8x4096xf16>, tensor<32x1024xbf16>, tensor<16x768xf32>, tensor<8x40xf16>) {
  %y0 = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<2x8x4096xf16>, tensor<4096xf16> -> tensor<2x8x4096xf16>
  %y1 = sgpu.rms_norm %xb, %wb {epsilon = 1.0e-06 : f32} : tensor<32x1024xbf16>, tensor<1024xbf16> -> tensor<32x1024xbf16>
  %y2 = sgpu.layer_norm %xl, %wl, %bl {epsilon = 1.0e-05 : f32} : tensor<16x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<16x768xf32>
  %y3 = sgpu.layer_norm %xs, %ws, %bs {epsilon = 1.0e-05 : f32} : tensor<8x40xf16>, tensor<40xf16>, tensor<40xf16> -> tensor<8x40xf16>
  // GELU (tanh form) of the last norm, in f32 inside the body.
  %e = tensor.empty() : tensor<8x40xf16>
  %g = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y3 : tensor<8x40xf16>) outs(%e : tensor<8x40xf16>) {
  ^bb0(%a: f16, %o: f16):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %c = arith.constant 0.7978845608 : f32
    %k = arith.constant 0.044715 : f32
    %v = arith.extf %a : f16 to f32
    %v3 = arith.mulf %v, %v : f32
    %v3b = arith.mulf %v3, %v : f32
    %in = arith.mulf %v3b, %k : f32
    %s = arith.addf %v, %in : f32
    %t = arith.mulf %s, %c : f32
    %th = math.tanh %t : f32
    %p = arith.addf %th, %one : f32
    %hv = arith.mulf %v, %half : f32
    %r = arith.mulf %hv, %p : f32
    %rh = arith.truncf %r : f32 to f16
    linalg.yield %rh : f16
  } -> tensor<8x40xf16>
  return %y0, %y1, %y2, %g : tensor<2x8x4096xf16>, tensor<32x1024xbf16>, tensor<16x768xf32>, tensor<8x40xf16>
}
