//===- SGPUTypes.td - sgpu types ---------------------------*- tablegen -*-===//

#ifndef SPARSEOPT_DIALECT_SGPU_SGPUTYPES_TD
#define SPARSEOPT_DIALECT_SGPU_SGPUTYPES_TD

include "sparse-opt/Dialect/SGPU/SGPUAttrs.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class SGPU_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<SGPU_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def SGPU_CompressedType : SGPU_Type<"Compressed", "compressed"> {
  let summary = "a 2:4-compressed weight: kept values plus metadata";
  let description = [{
    `!sgpu.compressed<NxKxT, #sgpu.nm<2:4>>` is a logical `N x K` weight
    (N output features, K the reduction axis, T = f16 or bf16) stored in the
    layout the sparse tensor-core instructions read:

    * values: `roundUp(N, 16) x roundUp(K, 32) / 2` elements, row-major; the
      two kept values of chunk `c` (columns `4c..4c+3`) sit at columns `2c`
      and `2c + 1`;
    * metadata: `roundUp(N, 16) * roundUp(K, 32) / 32` 32-bit words, one per
      (16-row tile, 32-column k-step, group g, half p) in exactly the
      per-lane register layout of `mma.sp::ordered_metadata ... m16n8k32`:
      word `((rt * K/32 + ks) * 8 + g) * 2 + p` holds the 4-bit position
      pairs of row `16 rt + g` (low half) and `16 rt + g + 8` (high half)
      for the chunks `8 ks + 4p .. 8 ks + 4p + 3`.

    Values of this type come from `sgpu.compress` (a dense weight) or
    `sgpu.assemble` (already compressed parts, e.g. constants folded at
    compile time), or from `sgpu.nm_decompose`.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "::mlir::sgpu::NMSparsityAttr":$pattern);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRows() const { return getShape()[0]; }
    int64_t getCols() const { return getShape()[1]; }
    /// Rows padded to the 16-row tile of the sparse MMA.
    int64_t getPaddedRows() const { return (getRows() + 15) / 16 * 16; }
    /// K padded to the 32-column k-step of the sparse MMA.
    int64_t getPaddedCols() const { return (getCols() + 31) / 32 * 32; }
    /// Type of the values part.
    ::mlir::RankedTensorType getValuesType() const;
    /// Type of the metadata part.
    ::mlir::RankedTensorType getMetadataType() const;
  }];
}

def SGPU_TwellType : SGPU_Type<"Twell", "twell"> {
  let summary = "TwELL-packed activations";
  let description = [{
    `!sgpu.twell<MxFxT, #sgpu.twell<tile = 256, compression = 4>>` holds the
    nonzeros of a logical `M x F` activation matrix (T = bf16 or f16) in the
    tile-wise ELLPACK layout described by the layout attribute, plus the
    per-row overflow flags of the hybrid format: a row with any tile over
    capacity is kept densely in a fallback buffer instead.

    Concrete form, with `TT` the tile width, `C` the compression factor,
    `W = TT / C` words per tile and `NT = ceil(F / TT)` tiles per row (the
    last one partial when `F` is not a multiple of `TT`); the CPU reference
    (`convert-sgpu-to-loops`) builds exactly these parts and the GPU kernels
    use the same layout:

    * words, `M x NT x W` 32-bit words, row-major: for (row m, tile t),
      word 0 is the number of nonzeros of the tile (the true count, which
      may exceed the capacity `W - 1`); words `1 .. min(count, W - 1)` hold
      one entry per nonzero, `column-in-tile (bits 0-15) | the 16-bit value's
      bits (bits 16-31)`, in increasing column order; unused words are 0
      in the CPU reference and not written (undefined) by the GPU pack.
      The global column is `t * TT + column-in-tile`.
    * flags, `M` 32-bit integers: 1 when any tile of the row has more than
      `W - 1` nonzeros (the row overflowed), else 0. The words of an
      overflowed row are not read.
    * fallback, a dense `M x F x T` matrix sized for the worst case (every
      row overflowing, so no row is ever dropped): an overflowed row holds
      its activations; every other row is 0 in the CPU reference and not
      written (undefined) by the GPU pack, since no consumer reads it.
    * fallback rows, one 32-bit integer: how many rows overflowed (the
      count a run-time guard reads; `sgpu-reference{twell-report=true}`
      prints it).

    A nonzero is an element that compares unequal to 0.0 (`-0.0` is zero,
    a NaN is kept). Consumers of an overflowed row use every neuron of its
    fallback row; of other rows, exactly the entries.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "::mlir::sgpu::TwellLayoutAttr":$layout);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// M and F of the logical matrix.
    int64_t getRows() const { return getShape()[0]; }
    int64_t getCols() const { return getShape()[1]; }
    /// NT = ceil(F / TT): the tiles of a row, the last one partial when
    /// TT does not divide F.
    int64_t getTilesPerRow() const {
      int64_t tile = getLayout().getTile();
      return (getCols() + tile - 1) / tile;
    }
  }];
}

def SGPU_TokenType : SGPU_Type<"Token", "token"> {
  let summary = "completion token of an asynchronous collective";
  let description = [{
    `!sgpu.token` is produced by `sgpu.all_reduce_start` and consumed by the
    matching `sgpu.all_reduce_wait`.
  }];
}

#endif // SPARSEOPT_DIALECT_SGPU_SGPUTYPES_TD
