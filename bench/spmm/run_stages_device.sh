#!/usr/bin/env bash
# The GPU machine's half of the stage A/B with the TMA-store epilogue
# (256-token tiles: 4 stages and 128-token boxes, the table's choice at
# the time, against 5 stages and 64-token boxes). Built into .carry/:
#   large_s4/ large_s5/   make_cases.py --set large [--options stages=5]
#   mid_s4/ mid_s5/       make_cases.py --set mid [--options stages=5]
source "$(dirname "$0")/../device_env.sh" /tmp/stages-out
for v in large_s4 large_s5 mid_s4 mid_s5; do
  set=${v%_*}; opts=""; [ "${v#*_}" = s5 ] && opts="stages=5"
  step "2:4 $set, $v"
  timeout 120 python3 bench/spmm/run_spmm.py --set "$set" --artifacts "$carry/$v" --commit "$commit" --options "$opts" \
    --command "python3 bench/spmm/run_spmm.py --set $set --artifacts .carry/$v" --out "$out/spmm_stages_$v.json" 2>&1 | cut -c1-200 | tail -13
done
