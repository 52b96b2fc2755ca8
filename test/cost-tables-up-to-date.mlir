// The cost model's measurements (lib/Transforms/SparseCostTables.inc) are
// the committed benchmark records (regenerate with
// /usr/bin/python3 bench/spmm/cost_tables.py).
// RUN: %python %sparse_opt_src/bench/spmm/cost_tables.py --check | FileCheck %s
// CHECK: cost tables: up to date (120 measured cases)
