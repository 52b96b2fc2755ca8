//===- SlideIndex.h - sliding-window index maps as IR -----------*- C++ -*-===//
//
// The two index maps of the (2N-2):2N -> 2:4 decomposition, emitted as index
// arithmetic for the generated kernels and the CPU reference: where a
// window's chunk goes along K' (the weight side) and which original column a
// lifted column copies (the activation side). Plain order, or the tiled
// order of `tile_groups` (include/sparse-opt/Formats/SlidingWindow.h,
// sections 4 and 7, the same maps in C++ for compile-time constants).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_SLIDEINDEX_H
#define SPARSEOPT_CONVERSION_SLIDEINDEX_H

#include "IndexMath.h"

namespace mlir::sgpu {

/// The lifted chunk of window `window` (a constant) of group `group`.
inline Value liftedChunkIndex(IndexMath &im, Value group, int64_t window,
                              int64_t familyN, int64_t tileGroups) {
  int64_t windows = familyN - 1;
  if (tileGroups <= 0)
    return im.add(im.mul(group, windows), window);
  int64_t even = (windows + 1) / 2, odd = windows / 2;
  Value base = im.mul(im.div(group, tileGroups), tileGroups * windows);
  Value local = im.rem(group, tileGroups);
  if (window % 2 == 0)
    return im.add(im.add(base, im.mul(local, even)), window / 2);
  return im.add(im.add(base, im.mul(local, odd)),
                tileGroups * even + (window - 1) / 2);
}

/// The original column that lifted column `col` copies (may be >= K:
/// padding).
inline Value liftedSourceIndex(IndexMath &im, Value col, int64_t familyN,
                               int64_t tileGroups) {
  int64_t windows = familyN - 1;
  Value chunk = im.div(col, 4), lane = im.rem(col, 4);
  Value group, window;
  if (tileGroups <= 0 || windows == 1) {
    group = im.div(chunk, windows);
    window = im.rem(chunk, windows);
  } else {
    int64_t even = (windows + 1) / 2, odd = windows / 2;
    Value tileBase = im.mul(im.div(chunk, tileGroups * windows), tileGroups);
    Value inTile = im.rem(chunk, tileGroups * windows);
    Value isEven = im.lt(inTile, tileGroups * even);
    Value rest = im.sub(inTile, im.c(tileGroups * even));
    Value evenGroup = im.div(inTile, even);
    Value evenWindow = im.mul(im.rem(inTile, even), 2);
    // Clamped so that the odd branch's division is harmless on even slots.
    Value oddRest = arith::SelectOp::create(im.b, im.loc, isEven, im.c(0), rest);
    Value oddGroup = im.div(oddRest, odd);
    Value oddWindow = im.add(im.mul(im.rem(oddRest, odd), 2), 1);
    group = im.add(tileBase, arith::SelectOp::create(im.b, im.loc, isEven,
                                                     evenGroup, oddGroup));
    window = arith::SelectOp::create(im.b, im.loc, isEven, evenWindow,
                                     oddWindow);
  }
  return im.add(im.add(im.mul(group, 2 * familyN), im.mul(window, 2)), lane);
}

} // namespace mlir::sgpu

#endif // SPARSEOPT_CONVERSION_SLIDEINDEX_H
