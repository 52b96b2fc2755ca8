// The TwELL cost model's replay set (lib/Transforms/TwellCostRecords.inc)
// is the committed benchmark records (regenerate with
// /usr/bin/python3 bench/twell/cost_records.py).
// RUN: %python %sparse_opt_src/bench/twell/cost_records.py --check | FileCheck %s
// CHECK: twell cost records: up to date (120 measured cases)
