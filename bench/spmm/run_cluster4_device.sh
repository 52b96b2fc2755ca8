#!/usr/bin/env bash
# The GPU machine's half of the clusters-of-four A/B (cluster=4 against the
# default pairs from 4096 tokens). Built on the compiler's machine into
# .carry/:
#   c2/, c4/, c4r/   make_cases.py --set large --options "cluster=2" |
#                    "cluster=4" | "cluster=4 reserve-sms=4" --out .carry/<dir>
#   c2_68/, c4_68/   make_cases.py --set large68 --options "cluster=2" |
#                    "cluster=4" --out .carry/<dir>
# and build/lib. Results go to $OUT (spmm_cluster4_*_h200.json).
source "$(dirname "$0")/../device_env.sh" /tmp/cluster4-out

source "$(dirname "$0")/run_set.sh"

for v in c2 c4 c4r; do
  step "2:4 at M >= 4096, $v"
  run large "$v" "spmm_cluster4_${v}_h200.json"
done
for v in c2_68 c4_68; do
  step "6:8 at M >= 4096, $v"
  run large68 "$v" "spmm_cluster4_${v}_h200.json" --no-cusparselt
done
