// No function in lib/ over 200 lines and no class over 500; those over the
// limits today are listed in scripts/code-size-allowed.txt and may only
// shrink (scripts/check-code-size.py).
// RUN: %python %sparse_opt_src/scripts/check-code-size.py | FileCheck %s
// CHECK: code size: {{[0-9]+}} functions or classes over the limits, {{[0-9]+}} listed, 0 problems
