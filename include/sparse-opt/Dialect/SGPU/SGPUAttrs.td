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

#endif // SPARSEOPT_DIALECT_SGPU_SGPUATTRS_TD
