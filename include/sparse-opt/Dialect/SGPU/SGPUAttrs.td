//===- SGPUAttrs.td - sgpu attributes and enums ------------*- tablegen -*-===//

#ifndef SPARSEOPT_DIALECT_SGPU_SGPUATTRS_TD
#define SPARSEOPT_DIALECT_SGPU_SGPUATTRS_TD

include "sparse-opt/Dialect/SGPU/SGPUDialect.td"
include "mlir/IR/EnumAttr.td"

class SGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<SGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def SGPU_NMSparsityAttr : SGPU_Attr<"NMSparsity", "nm"> {
  let summary = "structured N:M weight sparsity";
  let description = [{
    `#sgpu.nm<n:m>` states that every aligned group of `m` consecutive
    elements along the reduction (K) axis of a weight row holds at most `n`
    nonzeros. Accepted patterns are 2:4 and the (2N-2):2N family for
    N = 2..8: 2:4, 4:6, 6:8, 8:10, 10:12, 12:14, 14:16. Anything else is
    rejected by the verifier.

    Used as the encoding of a weight tensor type
    (`tensor<4096x4096xf16, #sgpu.nm<6:8>>`) and as a pattern attribute of
    the decomposition and lift ops. The upstream
    `#sparse_tensor.encoding<{map = (i, j) -> (i : dense, j floordiv 4 :
    dense, j mod 4 : structured[2, 4])}>` is accepted as a synonym for
    `#sgpu.nm<2:4>`.

    Example:

    ```mlir
    %w = arith.constant dense<...> : tensor<64x128xf16, #sgpu.nm<2:4>>
    ```
  }];
  let parameters = (ins "unsigned":$n, "unsigned":$m);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// N of the (2N-2):2N family (2 for 2:4, 4 for 6:8).
    unsigned getFamilyN() const { return getM() / 2; }
    /// Whether this is plain 2:4.
    bool is24() const { return getN() == 2 && getM() == 4; }
  }];
}

def SGPU_TwellLayoutAttr : SGPU_Attr<"TwellLayout", "twell"> {
  let summary = "tile-wise ELLPACK (TwELL) packing parameters";
  let description = [{
    `#sgpu.twell<tile = T, compression = C>` describes how a `[M, F]`
    activation matrix is packed: each row is cut into tiles of `T` columns;
    each (row, tile) owns `T / C` 32-bit words, word 0 is the count and the
    others hold `column-in-tile (low 16 bits) | value (high 16 bits)`
    entries, so a tile keeps at most `T / C - 1` nonzeros. Rows whose tile
    overflows take the dense fallback path.

    Constraints: `T` is a power of two in [16, 65536] (column indices are
    tile-local 16-bit values) and `C` is 2, 4 or 8.
  }];
  let parameters = (ins "unsigned":$tile, "unsigned":$compression);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// 32-bit words per (row, tile), count word included.
    unsigned getWordsPerTile() const { return getTile() / getCompression(); }
    /// Entries a (row, tile) can hold before it overflows.
    unsigned getCapacity() const { return getWordsPerTile() - 1; }
  }];
}

def SGPU_Activation : I32EnumAttr<"Activation", "elementwise activation fused into a GEMM epilogue", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"relu", 1>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}
def SGPU_ActivationAttr : EnumAttr<SGPU_Dialect, SGPU_Activation, "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def SGPU_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a collective", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"prod", 1>,
  I32EnumAttrCase<"max", 2>,
  I32EnumAttrCase<"min", 3>,
  I32EnumAttrCase<"avg", 4>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}
def SGPU_ReduceKindAttr : EnumAttr<SGPU_Dialect, SGPU_ReduceKind, "reduce"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Lowering configurations: what sgpu-select-kernels chose for one op, read
// by convert-sgpu-to-gpu (the op's `sgpu.config`).
//===----------------------------------------------------------------------===//

def SGPU_SpmmKernelKind : I32EnumAttr<"SpmmKernelKind",
    "the generated kernel of an sgpu.spmm", [
  I32EnumAttrCase<"mma", 0>,
  I32EnumAttrCase<"wgmma", 1>,
  I32EnumAttrCase<"tma", 2>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}

def SGPU_LiftLowering : I32EnumAttr<"LiftLowering",
    "how the sgpu.lift feeding an sgpu.spmm is lowered", [
  I32EnumAttrCase<"separate", 0>,
  I32EnumAttrCase<"padded", 1>,
  I32EnumAttrCase<"fused", 2>,
  I32EnumAttrCase<"split", 3>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}

def SGPU_SpmmConfigAttr : SGPU_Attr<"SpmmConfig", "spmm_config"> {
  let summary = "the kernel configuration of one sgpu.spmm";
  let description = [{
    `#sgpu.spmm_config<kernel = K, ...>` is the lowering of one `sgpu.spmm`,
    as `sgpu-select-kernels` chose it (or as written by hand), under the
    op's `sgpu.config`. `convert-sgpu-to-gpu` builds exactly this.

    * `kernel`: `mma` (the warp-level `mma.sp` kernel), `wgmma` (the
      register-staged warpgroup kernel) or `tma` (the warp-specialized TMA
      pipeline, sm_90a).
    * `lift` (default `separate`): the `sgpu.lift` feeding the op is lowered
      on its own (`separate`, also when there is none), gathered into rows
      of the weight's padded K by the spmm's lowering (`padded`), done in the
      kernel's operand loads (`fused`, 6:8 in the order of
      `tile_groups = 8`) or split (`split`, `tile_groups = 16`: only the
      shared windows are copied).
    * For `tma` only: `tile_n` (tokens per block, a power of two from 16 to
      256), `stages` (the shared-memory ring), `splits` (split-K, 1 for
      none), `cluster` (1, 2 or 4 blocks), `store_box` (0: the epilogue
      stores from registers; else the TMA store's box, 16 to 128 tokens)
      and `persistent` (one block per multiprocessor walks the tiles).

    Example:

    ```mlir
    %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma,
        tile_n = 128, stages = 6, store_box = 64>} : ...
    ```
  }];
  let parameters = (ins
    EnumParameter<SGPU_SpmmKernelKind>:$kernel,
    DefaultValuedParameter<"::mlir::sgpu::LiftLowering",
                           "::mlir::sgpu::LiftLowering::separate">:$lift,
    DefaultValuedParameter<"int64_t", "0">:$tile_n,
    DefaultValuedParameter<"int64_t", "0">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$splits,
    DefaultValuedParameter<"int64_t", "1">:$cluster,
    DefaultValuedParameter<"int64_t", "0">:$store_box,
    DefaultValuedParameter<"bool", "true">:$persistent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The most blocks one tile's k-tiles are split over.
    static constexpr int64_t kMaxSplits = 32;
    /// Whether the lift feeding the op is lowered with it (not on its own).
    bool liftsInside() const {
      return getLift() != ::mlir::sgpu::LiftLowering::separate;
    }
  }];
}

def SGPU_TwellPackForm : I32EnumAttr<"TwellPackForm",
    "how an sgpu.twell_pack is lowered", [
  I32EnumAttrCase<"kernel", 0>,
  I32EnumAttrCase<"fused_producer", 1>,
  I32EnumAttrCase<"in_consumer", 2>,
  I32EnumAttrCase<"blocks", 3>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}

def SGPU_TwellPackConfigAttr
    : SGPU_Attr<"TwellPackConfig", "twell_pack_config"> {
  let summary = "the lowering of one sgpu.twell_pack";
  let description = [{
    `#sgpu.twell_pack_config<form = F>`: `kernel` (the one-block-per-row
    pack kernel after the producing GEMM), `fused_producer` (the producing
    `sgpu.matmul {activation = relu}` and the pack become one generated
    GEMM whose epilogue packs, sm_90a), `in_consumer` (no pack: the one
    CUDA-core consumer reads H and packs as it goes) or `blocks` (the block
    form of the tensor-core consumer). `cluster` (1, 2 or 4; only with
    `fused_producer`): blocks per cluster of the fused producer's GEMM.
  }];
  let parameters = (ins EnumParameter<SGPU_TwellPackForm>:$form,
                        DefaultValuedParameter<"int64_t", "1">:$cluster);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def SGPU_TwellConsumerKind : I32EnumAttr<"TwellConsumerKind",
    "the consumer kernel of an sgpu.twell_ffn", [
  I32EnumAttrCase<"cuda_cores", 0>,
  I32EnumAttrCase<"tensor_cores", 1>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}

def SGPU_TwellFFNConfigAttr
    : SGPU_Attr<"TwellFFNConfig", "twell_ffn_config"> {
  let summary = "the lowering of one sgpu.twell_ffn";
  let description = [{
    `#sgpu.twell_ffn_config<consumer = C, passes = P, tma_gather = G>`:
    `cuda_cores` (one block per token; `passes` launches over the tiles,
    1 to 64) or `tensor_cores` (sm_90a, blocks of 64 rows; its pack has the
    `blocks` form; `tma_gather` gathers the active rows of the weights
    with TMA instead of cp.async).
  }];
  let parameters = (ins
    EnumParameter<SGPU_TwellConsumerKind>:$consumer,
    DefaultValuedParameter<"int64_t", "1">:$passes,
    DefaultValuedParameter<"bool", "false">:$tma_gather);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The most launches a CUDA-core consumer spreads its tiles over.
    static constexpr int64_t kMaxPasses = 64;
  }];
}

def SGPU_AttentionKernelKind : I32EnumAttr<"AttentionKernelKind",
    "the generated kernel of an sgpu.attention", [
  I32EnumAttrCase<"chosen", 0, "auto">,
  I32EnumAttrCase<"cuda_cores", 1>,
  I32EnumAttrCase<"tensor_cores", 2>,
  I32EnumAttrCase<"decode", 3>,
  I32EnumAttrCase<"library", 4>,
  I32EnumAttrCase<"decode_tensor_cores", 5>
]> {
  let cppNamespace = "::mlir::sgpu";
  let genSpecializedAttr = 0;
}

def SGPU_AttentionConfigAttr
    : SGPU_Attr<"AttentionConfig", "attention_config"> {
  let summary = "the lowering of one sgpu.attention";
  let description = [{
    `#sgpu.attention_config<...>` fixes choices the attention lowering
    otherwise makes itself; every parameter is optional, and 0 leaves that
    choice to the lowering.

    * `kernel`: `auto` (the split-KV decode kernels for one query per
      sequence over a cache: `decode_tensor_cores` where it applies, else
      `decode`; else cuDNN's fused attention, called by the
      runtime, where it applies (measured faster than the generated
      tensor-core kernel: docs/performance.md), else the tensor-core kernel
      where it applies, else the CUDA-core one),
      `cuda_cores`, `tensor_cores`, `decode`, `decode_tensor_cores` (the
      split-KV decode with its split kernel on mma.sync, the query heads of
      a key/value head as the rows of a tile: f16/bf16, head size 64 or
      128, at most 8 query heads per key/value head) or `library` (an error
      where that kernel cannot run the op). `sgpu-select-kernels`
      records the resolved kernel and every parameter of it.
    * `rows_per_block` (CUDA-core kernel, `auto` or `cuda_cores`): warps per block, one query row
      each, 1 to 32 (0: 1 over a cache, else 4).
    * `warps` (tensor-core kernel, `auto` or `tensor_cores`): 2, 4 or 8 warps of 16 query rows per
      block (default 4). `min_blocks_per_sm`: ptxas caps the registers so
      that this many blocks fit one multiprocessor (0: no bound, up to 32).
    * Decode kernels (`auto`, `decode` or `decode_tensor_cores`): `splits`
      (1 to 1024 blocks per key/value row; 0: sized to fill the device).
      The CUDA-core one (`auto` or `decode`) also takes `unroll` (1 or 2
      keys per step; 0: 2) and `lanes_per_key` (a power of two up to 32; 0:
      the fewest lanes whose columns fit one 16-byte load and whose merge
      fits shared memory); either of them selects it under `auto`.

    Example:

    ```mlir
    %o = sgpu.attention %q, %k, %v positions(%p : tensor<8x1xi64>)
        {causal, scale = 0.088 : f32,
         sgpu.config = #sgpu.attention_config<lanes_per_key = 16, unroll = 2>}
        : ...
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"::mlir::sgpu::AttentionKernelKind",
                           "::mlir::sgpu::AttentionKernelKind::chosen">:$kernel,
    DefaultValuedParameter<"int64_t", "0">:$rows_per_block,
    DefaultValuedParameter<"int64_t", "4">:$warps,
    DefaultValuedParameter<"int64_t", "0">:$min_blocks_per_sm,
    DefaultValuedParameter<"int64_t", "0">:$splits,
    DefaultValuedParameter<"int64_t", "0">:$unroll,
    DefaultValuedParameter<"int64_t", "0">:$lanes_per_key);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The most blocks the decode kernel splits one key/value row over.
    static constexpr int64_t kMaxSplits = 1024;
  }];
}

def SGPU_LaunchConfigAttr : SGPU_Attr<"LaunchConfig", "launch_config"> {
  let summary = "the block size of an element-wise model-block kernel";
  let description = [{
    `#sgpu.launch_config<threads = T>`: the threads per block of the
    one-thread-per-element kernel of `sgpu.embedding`, `sgpu.rope` or
    `sgpu.cache_update` (a multiple of 32 up to 1024; default 256).
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "256">:$threads);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // SPARSEOPT_DIALECT_SGPU_SGPUATTRS_TD
