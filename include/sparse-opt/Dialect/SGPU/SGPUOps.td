//===- SGPUOps.td - sgpu operations ------------------------*- tablegen -*-===//

#ifndef SPARSEOPT_DIALECT_SGPU_SGPUOPS_TD
#define SPARSEOPT_DIALECT_SGPU_SGPUOPS_TD

include "sparse-opt/Dialect/SGPU/SGPUTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpBase.td"

class SGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<SGPU_Dialect, mnemonic, traits>;

def SGPU_Half16 : AnyTypeOf<[F16, BF16]>;
def SGPU_MatrixTensor : RankedTensorOf<[F16, BF16, F32]>;
def SGPU_Matrix16 : RankedTensorOf<[F16, BF16]>;
def SGPU_Matrix16OrF32 : RankedTensorOf<[F16, BF16, F32]>;

//===----------------------------------------------------------------------===//
// Structured weight sparsity
//===----------------------------------------------------------------------===//

def SGPU_CompressOp : SGPU_Op<"compress", [Pure]> {
  let summary = "compress a 2:4-sparse weight into values and metadata";
  let description = [{
    Compresses a dense `N x K` weight whose rows are 2:4 sparse along K into
    the tensor-core layout of `!sgpu.compressed`. The input may carry the
    `#sgpu.nm<2:4>` encoding (or its `sparse_tensor` synonym) or none.
    Weights that are constants are compressed at compile time by
    `sgpu-slide-sparse`, which replaces this op with `sgpu.assemble` of two
    constants and reports the first row and group that break the pattern.

    ```mlir
    %c = sgpu.compress %w : tensor<64x128xf16> -> !sgpu.compressed<64x128xf16, #sgpu.nm<2:4>>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$weight);
  let results = (outs SGPU_CompressedType:$result);
  let assemblyFormat = "$weight attr-dict `:` type($weight) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def SGPU_AssembleOp : SGPU_Op<"assemble", [Pure]> {
  let summary = "view already-compressed values and metadata as a compressed weight";
  let description = [{
    Pairs a values tensor (`roundUp(N,16) x roundUp(K,32)/2`, element type of
    the weight) and a metadata tensor (`roundUp(N,16) * roundUp(K,32) / 32`
    words of `i32`) into a `!sgpu.compressed` value. The parts must already
    be in the layout `!sgpu.compressed` documents.

    ```mlir
    %w = sgpu.assemble %values, %meta : tensor<64x64xf16>, tensor<256xi32>
           -> !sgpu.compressed<64x128xf16, #sgpu.nm<2:4>>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$values, TensorOf<[I32]>:$metadata);
  let results = (outs SGPU_CompressedType:$result);
  let assemblyFormat = [{
    $values `,` $metadata attr-dict `:` type($values) `,` type($metadata)
    `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def SGPU_NMDecomposeOp : SGPU_Op<"nm_decompose", [Pure]> {
  let summary = "decompose a (2N-2):2N weight into overlapping 2:4 windows";
  let description = [{
    Rewrites an `N_out x K` weight whose rows follow `#sgpu.nm<(2N-2):2N>`
    into the 2:4 weight over the lifted reduction axis: K is zero-padded to
    a multiple of 2N and every group of 2N is cut into N-1 windows of 4 at
    stride 2; each nonzero goes to one window, greedily left to right, at
    most two per window. The result has `K' = roundUp(K, 2N) / 2N * 4(N-1)`
    columns and is 2:4 sparse. It pairs with `sgpu.lift` of the activation
    under the same pattern and the same `tile_groups`.

    `tile_groups` (positive, optional) chooses the tiled window order: K' is
    cut into tiles of that many groups, each holding the even windows of its
    groups (group after group), then their odd windows, and the group count
    is rounded up to a multiple of `tile_groups`, so
    `K' = roundUp(roundUp(K, 2N) / 2N, tile_groups) * 4(N-1)`. For 6:8 with
    8 groups per tile the first 64 lifted columns of every tile are the
    tile's 64 original columns in place: the sm_90a GEMM then loads them as
    they are and gathers only the other 32 in shared memory (no lifted copy
    of the activations in memory). `sgpu-slide-sparse` sets it.

    ```mlir
    %c = sgpu.nm_decompose %w : tensor<64x128xf16, #sgpu.nm<6:8>>
           -> !sgpu.compressed<64x192xf16, #sgpu.nm<2:4>>
    %t = sgpu.nm_decompose %w {tile_groups = 8} : tensor<64x100xf16, #sgpu.nm<6:8>>
           -> !sgpu.compressed<64x192xf16, #sgpu.nm<2:4>>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$weight,
                       OptionalAttr<I64Attr>:$tile_groups);
  let results = (outs SGPU_CompressedType:$result);
  let assemblyFormat = "$weight attr-dict `:` type($weight) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def SGPU_LiftOp : SGPU_Op<"lift", [Pure]> {
  let summary = "lift activations onto the sliding-window reduction axis";
  let description = [{
    The fixed gather that pairs with `sgpu.nm_decompose`: for an `M x K`
    activation and pattern (2N-2):2N,
    `out[m, g*4(N-1) + 4j + l] = in[m, g*2N + 2j + l]` (zero where the
    source index is past K), for group g, window j < N-1 and l < 4. With
    `tile_groups` the windows are in the tiled order of
    `sgpu.nm_decompose` (the same attribute on both ops of a pair).

    ```mlir
    %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<16x128xf16> -> tensor<16x192xf16>
    %xt = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<16x100xf16> -> tensor<16x192xf16>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$input, SGPU_NMSparsityAttr:$pattern,
                       OptionalAttr<I64Attr>:$tile_groups);
  let results = (outs SGPU_Matrix16:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def SGPU_SpmmOp : SGPU_Op<"spmm", [Pure]> {
  let summary = "2:4 sparse matrix multiply on sparse tensor cores";
  let description = [{
    `Y = act(X . W^T + b)` for activations `X : M x K`, a 2:4-compressed
    weight `W : N x K` and an optional bias `b : N`, accumulating in f32;
    `Y : M x N` has the element type of X (or f32). The bias (converted to
    f32) and the optional `activation` are applied to the f32 accumulator
    before the result is rounded once (the GEMM epilogue).

    ```mlir
    %y = sgpu.spmm %x, %w bias(%b : tensor<64xf16>) {activation = #sgpu.activation<relu>}
           : tensor<32x128xf16>, !sgpu.compressed<64x128xf16, #sgpu.nm<2:4>>
           -> tensor<32x64xf16>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$input, SGPU_CompressedType:$weight,
                       Optional<RankedTensorOf<[F16, BF16, F32]>>:$bias,
                       OptionalAttr<SGPU_ActivationAttr>:$activation);
  let results = (outs SGPU_Matrix16OrF32:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict
    `:` type($input) `,` qualified(type($weight)) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The epilogue activation (none when the attribute is absent).
    ::mlir::sgpu::Activation getActivationOrNone() {
      auto a = getActivation();
      return a ? *a : ::mlir::sgpu::Activation::none;
    }
  }];
}

def SGPU_MatmulOp : SGPU_Op<"matmul", [Pure]> {
  let summary = "dense matrix multiply, run as a library GEMM on the GPU";
  let description = [{
    `Y = act(X . W^T + b)` for activations `X : M x K`, a dense weight
    `W : N x K` (the torch `Linear` layout) and an optional bias `b : N` of
    the result's element type (what cuBLASLt adds), accumulating in f32; `Y : M x N` has the element type of X (or f32).
    The bias and the optional `activation` are applied to the f32
    accumulator before the single rounding, as in `sgpu.spmm`.

    On the GPU the op is a library call, not a generated kernel:
    `convert-sgpu-to-gpu` turns it into `sgpu.gemm_call` on buffers, which
    the runtime program runs with cuBLASLt (a `gemm` line). The CPU
    reference (`convert-sgpu-to-loops`) lowers it to loops.
    `sgpu-dense-matmul` produces it from dense `linalg.matmul`, and
    `sgpu-slide-sparse` where its cost model keeps a sparse-annotated matmul
    dense because the sparse kernel measured slower.

    ```mlir
    %y = sgpu.matmul %x, %w bias(%b : tensor<64xf16>) {activation = #sgpu.activation<relu>}
           : tensor<32x128xf16>, tensor<64x128xf16> -> tensor<32x64xf16>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$input, SGPU_Matrix16:$weight,
                       Optional<RankedTensorOf<[F16, BF16, F32]>>:$bias,
                       OptionalAttr<SGPU_ActivationAttr>:$activation);
  let results = (outs SGPU_Matrix16OrF32:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict
    `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The epilogue activation (none when the attribute is absent).
    ::mlir::sgpu::Activation getActivationOrNone() {
      auto a = getActivation();
      return a ? *a : ::mlir::sgpu::Activation::none;
    }
  }];
}

def SGPU_GemmCallOp : SGPU_Op<"gemm_call"> {
  let summary = "a library GEMM on buffers, run by the runtime program";
  let description = [{
    The buffer form of `sgpu.matmul`, written by `convert-sgpu-to-gpu`:
    `result = act(input . weight^T + bias)` on statically shaped row-major
    memrefs (`input : M x K`, `weight : N x K`, `bias : N` of the result's
    element type, `result : M x N`), f32 accumulation. It is a host operation:
    `sgpu-emit-artifacts` writes it as a `gemm` line of the runtime program,
    which calls cuBLASLt on the program's stream, in order with the kernel
    launches around it.

    ```mlir
    sgpu.gemm_call %x, %w into %y : memref<16x4096xf16>, memref<14336x4096xf16>, memref<16x14336xf16>
    ```
  }];
  let arguments = (ins Arg<AnyStaticShapeMemRef, "X", [MemRead]>:$input,
                       Arg<AnyStaticShapeMemRef, "W", [MemRead]>:$weight,
                       Arg<Optional<AnyStaticShapeMemRef>, "bias",
                           [MemRead]>:$bias,
                       Arg<AnyStaticShapeMemRef, "Y", [MemWrite]>:$result,
                       OptionalAttr<SGPU_ActivationAttr>:$activation);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? `into`
    $result attr-dict `:` type($input) `,` type($weight) `,` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The epilogue activation (none when the attribute is absent).
    ::mlir::sgpu::Activation getActivationOrNone() {
      auto a = getActivation();
      return a ? *a : ::mlir::sgpu::Activation::none;
    }
  }];
}

def SGPU_AttentionCallOp : SGPU_Op<"attention_call"> {
  let summary = "library attention on buffers, run by the runtime program";
  let description = [{
    The buffer form of an `sgpu.attention` that `sgpu-select-kernels` gave
    to the library (`#sgpu.attention_config<kernel = library>`), written by
    `convert-sgpu-to-gpu`: `result = softmax(query . key^T * scale) . value`
    per batch and head on row-major memrefs `query : B x H x Sq x D`,
    `key, value : B x Hkv x Sk x D` (H a multiple of Hkv) and
    `result : B x H x Sq x D`, f16 or bf16, softmax in f32. `causal` masks
    the keys after the query (Sq = Sk). `seq_major` gives all four as
    `B x S x H x D` (the layout of an `sgpu.attention` with `seq_major`),
    which cuDNN reads through its strides. It is a host operation:
    `sgpu-emit-artifacts` writes it as an `attention` line of the runtime
    program, which runs cuDNN's fused attention on the program's stream, in
    order with the launches around it.

    ```mlir
    sgpu.attention_call %q, %k, %v into %o {causal, scale = 0.088 : f32}
        : memref<1x32x2048x128xbf16>, memref<1x8x2048x128xbf16>,
          memref<1x8x2048x128xbf16>, memref<1x32x2048x128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyStaticShapeMemRef, "Q", [MemRead]>:$query,
                       Arg<AnyStaticShapeMemRef, "K", [MemRead]>:$key,
                       Arg<AnyStaticShapeMemRef, "V", [MemRead]>:$value,
                       Arg<AnyStaticShapeMemRef, "O", [MemWrite]>:$result,
                       UnitAttr:$causal, F32Attr:$scale, UnitAttr:$seq_major);
  let extraClassDeclaration = [{
    /// As sgpu.attention's: B x H x S x D, or B x S x H x D with seq_major.
    unsigned headsDim() { return getSeqMajor() ? 2 : 1; }
    unsigned seqDim() { return getSeqMajor() ? 1 : 2; }
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value `into` $result attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_WeightCheckOp : SGPU_Op<"weight_check"> {
  let summary = "report a weight argument that breaks its declared sparsity";
  let description = [{
    A host operation after the generated kernel that compresses the weight
    argument `weight` (a (2N-2):2N or 2:4 weight given to the program as a
    param and prepared on the GPU once, when it is bound): `status` is the
    kernel's status word, 0 when every group of the weight keeps its
    pattern, else `2^31 - 1 - (row * groups + group)` for the first
    offending group (the kernel takes the maximum over the offenders).
    `sgpu-emit-artifacts` writes it as a `check` line of the program's
    prepare stage; the runtime reads the word when the params are bound and
    fails with an error naming the row and the group.

    ```mlir
    sgpu.weight_check %status for %w {pattern = #sgpu.nm<6:8>, groups = 512}
        : memref<1xi32>, memref<4096x4096xf16>
    ```
  }];
  // No declared memory effects: the op reports an error, so it must never
  // be removed as dead.
  let arguments = (ins MemRefOf<[I32]>:$status, AnyStaticShapeMemRef:$weight,
                       SGPU_NMSparsityAttr:$pattern, I64Attr:$groups);
  let assemblyFormat = [{
    $status `for` $weight attr-dict `:` type($status) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// TwELL activation sparsity
//===----------------------------------------------------------------------===//

def SGPU_TwellPackOp : SGPU_Op<"twell_pack", [Pure]> {
  let summary = "pack the nonzeros of an activation matrix in TwELL form";
  let description = [{
    Packs the nonzero entries of `H : M x F` (normally the output of a
    ReLU) into the tile-wise ELLPACK layout of the result type. Rows with a
    tile over capacity are kept in the dense fallback part instead; no
    entry is ever dropped. In generated code this op is fused into the
    epilogue of the GEMM that produces H.

    ```mlir
    %p = sgpu.twell_pack %h : tensor<128x512xbf16>
           -> !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
    ```
  }];
  let arguments = (ins SGPU_Matrix16:$input);
  let results = (outs SGPU_TwellType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def SGPU_TwellFFNOp : SGPU_Op<"twell_ffn", [Pure, AttrSizedOperandSegments]> {
  let summary = "sparse FFN consumer over the active neurons of TwELL activations";
  let description = [{
    With packed activations `H : M x F`, down weight `Wd : d x F` and, for a
    gated FFN, the input `X : M x d` and up weight `Wu : F x d`:

    * ungated: `Y[m] = sum_j H[m, j] * Wd[:, j]`
    * gated:   `Y[m] = sum_j H[m, j] * (X[m] . Wu[j]) * Wd[:, j]`

    where j runs over the active (nonzero) neurons of row m only.

    ```mlir
    %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<128x64xbf16>, tensor<512x64xbf16>)
           : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>,
             tensor<64x512xbf16> -> tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins SGPU_TwellType:$packed, SGPU_Matrix16:$down,
                       Optional<SGPU_Matrix16>:$input,
                       Optional<SGPU_Matrix16>:$up);
  let results = (outs SGPU_Matrix16:$result);
  let assemblyFormat = [{
    $packed `,` $down (`up` `(` $input^ `,` $up `:` type($input) `,` type($up) `)`)?
    attr-dict `:` qualified(type($packed)) `,` type($down) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Transformer blocks the importers recognize (library or generated kernels)
//===----------------------------------------------------------------------===//

def SGPU_Float : AnyTypeOf<[F16, BF16, F32]>;
def SGPU_FloatTensor : RankedTensorOf<[F16, BF16, F32]>;

def SGPU_RMSNormOp : SGPU_Op<"rms_norm", [Pure]> {
  let summary = "RMS normalization over the last dimension";
  let description = [{
    `y = x * rsqrt(mean(x^2, -1) + epsilon) * weight`, computed in f32 and
    rounded to the input type. `weight` has the size of the last dimension.
    The importers produce this op from `RMSNorm` modules and from the
    decomposed form (`pow 2`, `mean(-1, keepdim)`, `+ eps`, `rsqrt`, `*`,
    `* weight`), so every RMSNorm reaches the compiler in one shape.

    ```mlir
    %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : tensor<2x8x64xf16>, tensor<64xf16> -> tensor<2x8x64xf16>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$input, SGPU_FloatTensor:$weight, F32Attr:$epsilon);
  let results = (outs SGPU_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_AddRMSNormOp : SGPU_Op<"add_rms_norm", [Pure]> {
  let summary = "a residual add and the RMS normalization of its sum";
  let description = [{
    `sum = input + residual`, rounded to the element type, and
    `result = rms_norm(sum, weight)` (as `sgpu.rms_norm` computes it from the
    rounded sum): the residual stream of a pre-norm transformer block, where
    each sublayer's output is added to the stream and the sum is normalized
    for the next sublayer. `sgpu-fuse-residual-norm` writes it for an
    element-wise add whose sum an `sgpu.rms_norm` reads; on the GPU one
    kernel reads both addends once and writes the sum and the normalized
    rows, where the add and the norm would be two kernels and a second pass
    over the sum.

    ```mlir
    %s, %y = sgpu.add_rms_norm %x, %r, %w {epsilon = 1.0e-05 : f32}
        : tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<64xbf16>
        -> tensor<2x8x64xbf16>, tensor<2x8x64xbf16>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$input, SGPU_FloatTensor:$residual,
                       SGPU_FloatTensor:$weight, F32Attr:$epsilon);
  let results = (outs SGPU_FloatTensor:$sum, SGPU_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $weight attr-dict `:` type($input) `,`
    type($residual) `,` type($weight) `->` type($sum) `,` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_LayerNormOp : SGPU_Op<"layer_norm", [Pure]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `y = (x - mean(x, -1)) * rsqrt(var(x, -1) + epsilon) * weight + bias`
    (biased variance), computed in f32 and rounded to the input type.
    `weight` and `bias` have the size of the last dimension (the importers
    pass ones and zeros for a LayerNorm without affine parameters).

    ```mlir
    %y = sgpu.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f32} : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$input, SGPU_FloatTensor:$weight,
                       SGPU_FloatTensor:$bias, F32Attr:$epsilon);
  let results = (outs SGPU_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight) `,` type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_AttentionOp : SGPU_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(q . k^T * scale + mask) . v` per batch and head, with
    `q : B x H x Sq x D`, `k : B x Hkv x Sk x D`, `v : B x Hkv x Sk x Dv`
    (H a multiple of Hkv: grouped-query attention shares each k/v head among
    H/Hkv query heads) and a result `B x H x Sq x Dv`. `causal` masks key
    positions after the query position (aligned to the end when Sq < Sk, as
    in decoding with a KV cache). The optional `mask` broadcasts to
    `B x H x Sq x Sk`: an `i1` mask keeps positions where it is true, a
    float mask is added to the scores. Softmax runs in f32.

    The importers produce this op from `F.scaled_dot_product_attention` and
    from the decomposed `matmul -> scale -> (+mask / masked_fill) -> softmax
    -> matmul` form.

    With `positions` (`B x Sq`, or `Sq` for the same positions in every
    sequence; i32 or i64; `causal` required) the keys are
    a KV cache: query `i` of sequence `b` sits at position
    `positions[b, i]` and sees exactly the keys `j <= positions[b, i]`, so
    sequences of different lengths share one batch. A query whose position
    is negative (padding) sees no key and gives zeros. The key and value
    batch may exceed the query batch (a cache sized for a larger batch:
    sequence `b` reads cache row `b`). Read `sgpu.cache_update` with it.

    `seq_major` (no mask or positions) gives `q`, `k`, `v` and the result
    as `B x S x H x D` instead: the same attention of the operands
    transposed by `[0, 2, 1, 3]`, with the result transposed back. It is
    the layout the projections write, so no transpose runs around the op;
    `sgpu-fold-attention-transposes` produces it for cuDNN's fused
    attention, which reads any strides. The generated kernels take the
    `B x H x S x D` layout only.

    ```mlir
    %o = sgpu.attention %q, %k, %v {causal, scale = 0.125 : f32}
           : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$query, SGPU_FloatTensor:$key,
                       SGPU_FloatTensor:$value,
                       Optional<RankedTensorOf<[I1, F16, BF16, F32]>>:$mask,
                       Optional<RankedTensorOf<[I32, I64]>>:$positions,
                       UnitAttr:$causal, F32Attr:$scale, UnitAttr:$seq_major);
  let results = (outs SGPU_FloatTensor:$result);
  let extraClassDeclaration = [{
    /// The dimension of the heads and of the sequence in q, k, v and the
    /// result: B x H x S x D, or B x S x H x D with seq_major.
    unsigned headsDim() { return getSeqMajor() ? 2 : 1; }
    unsigned seqDim() { return getSeqMajor() ? 1 : 2; }
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`positions` `(` $positions^ `:` type($positions) `)`)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_CacheUpdateOp : SGPU_Op<"cache_update", [AttrSizedOperandSegments]> {
  let summary = "write new keys or values into a KV cache, in place";
  let description = [{
    `cache[b, h, positions[b, s], :] = new[b, h, s, :]` for every sequence
    `b < B`, head and new token `s`, with `cache : Bmax x H x T x D` (the
    capacity `T` and the batch `Bmax >= B` are compile-time maxima),
    `new : B x H x S x D` and `positions : B x S` (or `S`, the same for
    every sequence; i32 or i64). A position
    outside `[0, T)` writes nothing (the padding of a shorter sequence is
    given -1). The result is the updated cache.

    The cache must be a function argument marked `sgpu.state` (a buffer the
    caller keeps between runs; docs/models.md), used by this
    op alone: the lowerings update that buffer in place, so the next run of
    the program, or of another program bound to the same buffer, sees the
    write. The op therefore has side effects and is never removed, even
    when its result is unused (a prefill that attends over the new keys).

    With `rope(%cos, %sin)` the op writes `sgpu.rope %update, %cos, %sin`
    instead of `%update` (the tables as `sgpu.rope` takes them, broadcast
    to the update's shape; computed in f32 and rounded once, the same
    values): the keys are rotated as they are written, with no kernel and
    no pass over memory of their own. `sgpu-fuse-rope-cache-write` makes
    this form from a RoPE that only the cache update reads.

    ```mlir
    %k2 = sgpu.cache_update %kcache, %k, %pos
            : tensor<4x2x64x16xf16>, tensor<1x2x8x16xf16>, tensor<1x8xi32> -> tensor<4x2x64x16xf16>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$cache, SGPU_FloatTensor:$update,
                       RankedTensorOf<[I32, I64]>:$positions,
                       Optional<SGPU_FloatTensor>:$rope_cos,
                       Optional<SGPU_FloatTensor>:$rope_sin);
  let results = (outs SGPU_FloatTensor:$result);
  let assemblyFormat = [{
    $cache `,` $update `,` $positions
    (`rope` `(` $rope_cos^ `,` $rope_sin `:` type($rope_cos) `,` type($rope_sin) `)`)?
    attr-dict `:` type($cache) `,` type($update) `,` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_EmbeddingOp : SGPU_Op<"embedding", [Pure]> {
  let summary = "row gather from an embedding table";
  let description = [{
    `y[i..., :] = table[ids[i...], :]` for a table `V x D` and integer ids of
    any rank; the result has the ids' shape followed by `D`. An id outside
    `[0, V)` gives a row of zeros (torch raises an error there; a compiled
    program cannot, so it writes a defined value instead of reading outside
    the table). The importers produce this op from `nn.Embedding`,
    `F.embedding` and ONNX `Gather` on axis 0 of a 2-D table.

    ```mlir
    %x = sgpu.embedding %table, %ids : tensor<128x64xf16>, tensor<1x16xi64> -> tensor<1x16x64xf16>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$table,
                       RankedTensorOf<[I32, I64]>:$ids);
  let results = (outs SGPU_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def SGPU_RopeOp : SGPU_Op<"rope", [Pure]> {
  let summary = "rotary position embedding (rotate-half form)";
  let description = [{
    `y = x * cos + rotate_half(x) * sin` over the last dimension `D` (even),
    with `rotate_half(x)[..., i] = -x[..., i + D/2]` for `i < D/2` and
    `x[..., i - D/2]` above, computed in f32 and rounded once. `cos` and
    `sin` have the rank and element type of `x` and broadcast to its shape
    (each dimension equal to x's or 1), so one table serves every batch and
    head. The importers produce this op from the `q * cos + rotate_half(q) *
    sin` form of Llama-style models.

    ```mlir
    %y = sgpu.rope %q, %cos, %sin : tensor<1x4x16x16xf16>, tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16> -> tensor<1x4x16x16xf16>
    ```
  }];
  let arguments = (ins SGPU_FloatTensor:$input, SGPU_FloatTensor:$cos,
                       SGPU_FloatTensor:$sin);
  let results = (outs SGPU_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,` type($sin) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel parameters
//===----------------------------------------------------------------------===//

// `!llvm.ptr` (the generic address space), without including the LLVM
// dialect's TableGen files (their enums would be generated here too).
def SGPU_GenericPointer : Type<
    And<[CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self)">,
         CPred<"::llvm::cast<::mlir::LLVM::LLVMPointerType>($_self)"
               ".getAddressSpace() == 0">]>,
    "LLVM pointer in the generic address space",
    "::mlir::LLVM::LLVMPointerType">;

def SGPU_TensorMapOp : SGPU_Op<"tensor_map", [Pure]> {
  let summary = "a TMA tensor map over a buffer, passed to a kernel by value";
  let description = [{
    Describes a CUDA TMA tiled tensor map (`CUtensorMap`, 128 bytes) over
    `source`, a statically shaped, row-major (identity layout) memref of
    rank 1 to 5 in the default memory space with element type f16, bf16, f32
    or i32. `box` is the shape of the box (the shared-memory tile one TMA
    copy moves), in the memref's dimension order (outermost first);
    `swizzle` is the shared-memory swizzle span in bytes: 0 (none), 32, 64
    or 128. Elements of a box that fall outside the memref read as zero.

    The op is only meaningful as a kernel operand of `gpu.launch_func`. The
    runtime encodes the map (`cuTensorMapEncodeTiled`) from the buffer's
    device address at each run and passes its 128 bytes by value, as a
    `__grid_constant__` kernel parameter: in the kernel the argument is an
    `!llvm.ptr` (the generic address of the parameter, the operand that
    `cp.async.bulk.tensor` and `prefetch.tensormap` take), listed in the
    kernel's `sgpu.tensor_map_args` attribute, which `sgpu-tensor-map-params`
    turns into a by-value parameter after `convert-gpu-to-nvvm`.
    `sgpu-emit-artifacts` writes the map as a `tmap:` launch argument.

    The verifier enforces what `cuTensorMapEncodeTiled` requires of the
    shape: each memref dimension from 1 to 2^32, each box dimension from 1
    to 256, an innermost box extent that is a multiple of 16 bytes (and, when
    swizzled, at most the swizzle span), and row pitches (the byte strides of
    all but the innermost dimension) that are multiples of 16 bytes and
    below 2^40.

    ```mlir
    %tm = sgpu.tensor_map %buf box [128, 32] swizzle 64 : memref<4096x2048xf16> -> !llvm.ptr
    gpu.launch_func @kernels::@gemm blocks in (%c32, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%tm : !llvm.ptr, %out : memref<4096x4096xf16>)
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source, DenseI64ArrayAttr:$box,
                       I64Attr:$swizzle);
  let results = (outs SGPU_GenericPointer:$result);
  let assemblyFormat = [{
    $source `box` $box `swizzle` $swizzle attr-dict `:` type($source) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The source memref's type.
    ::mlir::MemRefType getSourceType() {
      return ::llvm::cast<::mlir::MemRefType>(getSource().getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Tensor-parallel collectives
//===----------------------------------------------------------------------===//

def SGPU_AllReduceOp : SGPU_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "all-reduce across the tensor-parallel group";
  let description = [{
    Reduces `input` element-wise across all ranks of the tensor-parallel
    group; every rank receives the result. `kind` defaults to sum. The op has
    communication side effects: it is never removed or reordered with other
    collectives.

    ```mlir
    %r = sgpu.all_reduce %x {kind = #sgpu.reduce<sum>} : tensor<16x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<SGPU_ReduceKindAttr, "::mlir::sgpu::ReduceKind::sum">:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def SGPU_AllReduceStartOp : SGPU_Op<"all_reduce_start"> {
  let summary = "start an asynchronous all-reduce";
  let description = [{
    Launches the all-reduce of `input` on the communication stream and
    returns a token; the reduced value is obtained with
    `sgpu.all_reduce_wait`, which also takes `input` so that its buffer
    stays alive (and unwritten) while the collective reads it.
    `sgpu-async-collectives` creates these from `sgpu.all_reduce` and sinks
    the wait to the first use.

    ```mlir
    %t = sgpu.all_reduce_start %x : tensor<16x4096xbf16>
    %r = sgpu.all_reduce_wait %t, %x : tensor<16x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DefaultValuedAttr<SGPU_ReduceKindAttr, "::mlir::sgpu::ReduceKind::sum">:$kind);
  let results = (outs SGPU_TokenType:$token);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def SGPU_AllReduceWaitOp : SGPU_Op<"all_reduce_wait",
                                   [AllTypesMatch<["input", "result"]>]> {
  let summary = "wait for an asynchronous all-reduce and return its result";
  let description = [{
    Waits for the all-reduce started by the `sgpu.all_reduce_start` that
    produced `token` and returns the reduced tensor. `input` must be the
    started input: as an operand of the wait it keeps that buffer alive
    until the collective is done (bufferization may not reuse it for
    another result in between). Each token is waited on exactly once.
  }];
  let arguments = (ins SGPU_TokenType:$token, AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$token `,` $input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def SGPU_AllReduceCallOp : SGPU_Op<"all_reduce_call"> {
  let summary = "start an all-reduce on buffers, run by the runtime program";
  let description = [{
    The buffer form of `sgpu.all_reduce_start`, written by
    `convert-sgpu-to-gpu`: reduces `send` across the tensor-parallel group
    into `recv` (a buffer of the same type; the same buffer for an in-place
    reduction). It is a host operation: `sgpu-emit-artifacts` writes it as an
    `allreduce` line of the runtime program, which enqueues NCCL on the
    communicator's stream and lets the program's own stream go on. The token
    is consumed by exactly one `sgpu.all_reduce_sync`, after which `recv`
    holds the result.

    ```mlir
    %t = sgpu.all_reduce_call %x into %r : memref<16x4096xbf16>, memref<16x4096xbf16>
    sgpu.all_reduce_sync %t, %x : memref<16x4096xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyStaticShapeMemRef, "send", [MemRead]>:$send,
                       Arg<AnyStaticShapeMemRef, "recv", [MemWrite]>:$recv,
                       DefaultValuedAttr<SGPU_ReduceKindAttr, "::mlir::sgpu::ReduceKind::sum">:$kind);
  let results = (outs SGPU_TokenType:$token);
  let assemblyFormat = [{
    $send `into` $recv attr-dict `:` type($send) `,` type($recv)
  }];
  let hasVerifier = 1;
}

def SGPU_AllReduceSyncOp : SGPU_Op<"all_reduce_sync"> {
  let summary = "make the program's stream wait for an all-reduce on buffers";
  let description = [{
    The buffer form of `sgpu.all_reduce_wait`: the program's stream waits
    for the `sgpu.all_reduce_call` that produced `token` (a `wait` line of
    the runtime program). `send` is the buffer that call reads: as an operand
    here it stays alive, and unwritten, until the reduction is done.
  }];
  // No declared memory effects: the op orders the program's stream, so it
  // must never be removed as dead even though it reads only.
  let arguments = (ins SGPU_TokenType:$token, AnyStaticShapeMemRef:$send);
  let assemblyFormat = "$token `,` $send attr-dict `:` type($send)";
  let hasVerifier = 1;
}

#endif // SPARSEOPT_DIALECT_SGPU_SGPUOPS_TD
