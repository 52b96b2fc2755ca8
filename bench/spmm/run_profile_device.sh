#!/usr/bin/env bash
# The GPU machine's profile of one 2:4 spmm case and of the 6:8 lift: SASS,
# ncu sections plus per-SASS-line warp stall sampling (SourceCounters) of
# the spmm kernel, and the ncu durations of the lift and spmm kernels of
# three 6:8 cases. Built on the compiler's machine into .carry/:
#   large/    make_cases.py --set large --out .carry/large    (2:4, M >= 4096)
#   lift68/   make_cases.py --set lift --out .carry/lift68    (6:8, the benchmark grid)
# and build/lib. `$1` names the 2:4 case (default f16 4096 x 14336 x 4096).
# Results go to $OUT: the SASS, ncu_details.txt, ncu_source.csv (read the
# "Warp Stall Sampling" columns: where consumers wait on `full` barriers
# against wgmma waits) and ncu_68.txt.
case_name="${1:-spmm_f16_m4096_n14336_k4096}"
source "$(dirname "$0")/../device_env.sh" /tmp/profile-out
case="$carry/large/$case_name"
read -r m n k < <(echo "$case_name" | sed -E 's/.*_m([0-9]+)_n([0-9]+)_k([0-9]+)/\1 \2 \3/')
dtype=$(echo "$case_name" | cut -d_ -f2)

step "SASS of $case_name"
ptxas -arch=sm_90a -O3 "$case/kernels.ptx" -o /tmp/prof.cubin 2>&1 | tail -2
cuobjdump --dump-sass /tmp/prof.cubin > "$out/$case_name.sass"; wc -l "$out/$case_name.sass"

step "ncu of the spmm kernel"
timeout 200 ncu -k regex:sgpu_spmm --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SourceCounters -o /tmp/rep \
  python3 bench/spmm/profile_spmm.py --artifact "$case" --m "$m" --n "$n" --k "$k" --dtype "$dtype" --reps 1 2>&1 | tail -3
ncu -i /tmp/rep.ncu-rep --print-details all > "$out/ncu_details.txt" 2>&1
ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$out/ncu_source.csv" 2>&1
wc -l "$out/ncu_details.txt" "$out/ncu_source.csv"

step "6:8 at 4096 tokens: lift and spmm kernel durations (ncu)"
cat > /tmp/run68.py <<'PY'
import sys, torch
sys.path.insert(0, "python")
from sparse_opt import runtime
for d in sys.argv[1:]:
    p = runtime.load(d)
    # Any finite 16-bit pattern will do for timing (0x4444 is 4.27 in f16).
    ins = [torch.full((b // 2,), 0x4444, dtype=torch.int16, device="cuda") for b in p.input_bytes]
    outs = [torch.empty(b // 2, dtype=torch.int16, device="cuda") for b in p.output_bytes]
    for _ in range(2):
        p.run([t.data_ptr() for t in ins], [t.data_ptr() for t in outs], torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize(); p.close(); print("ran", d)
PY
timeout 120 ncu -k regex:sgpu --section SpeedOfLight python3 /tmp/run68.py \
  "$carry"/lift68/slide6to8_f16_m4096_n{14336_k4096,4096_k14336,18944_k3584} > "$out/ncu_68.txt" 2>&1
grep -E "sgpu_|Duration|ran " "$out/ncu_68.txt"
