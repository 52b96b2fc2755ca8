source bench/device_env.sh /tmp/prof-out
step "tools"; ncu --version | tail -1; ncu --help | grep -i -A1 "print-source\|--page " | head -20
case="$carry/base/spmm_f16_m4096_n14336_k4096"
step "SASS"
ptxas -arch=sm_90a -O3 "$case/kernels.ptx" -o /tmp/base.cubin 2>&1 | tail -2
cuobjdump --dump-sass /tmp/base.cubin > "$out/base_f16_m4096_n14336_k4096.sass"; wc -l "$out/base_f16_m4096_n14336_k4096.sass"
step "ncu"
timeout 200 ncu -k regex:sgpu_spmm --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SourceCounters -o /tmp/rep python3 bench/spmm/profile_spmm.py --artifact "$case" --m 4096 --n 14336 --k 4096 --reps 1 2>&1 | tail -3
ncu -i /tmp/rep.ncu-rep --print-details all > "$out/ncu_base_details.txt" 2>&1; wc -l "$out/ncu_base_details.txt"
ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$out/ncu_base_source.csv" 2>&1; wc -l "$out/ncu_base_source.csv"
for v in base nostore g4 g16; do
  step "timing $v"
  nc="--no-cusparselt"; [ $v = base ] && nc=""
  timeout 150 python3 bench/spmm/run_spmm.py --set large $nc --artifacts "$carry/$v" --commit "$commit" --options "exp=$v" \
    --out "$out/exp_$v.json" 2>&1 | cut -c1-200 | tail -13
done
cat > /tmp/run68.py <<'PY'
import sys, torch
sys.path.insert(0, "python")
from sparse_opt import runtime
for d in sys.argv[1:]:
    p = runtime.load(d)
    ins = [torch.full((n // 2,), 17476, dtype=torch.int16, device="cuda") for n in p.input_bytes]
    outs = [torch.empty(n // 2, dtype=torch.int16, device="cuda") for n in p.output_bytes]
    for _ in range(2):
        p.run([t.data_ptr() for t in ins], [t.data_ptr() for t in outs], torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize(); p.close(); print("ran", d)
PY
timeout 120 ncu -k regex:sgpu --section SpeedOfLight python3 /tmp/run68.py $carry/lift/slide6to8_f16_m4096_n14336_k4096 $carry/lift/slide6to8_f16_m4096_n4096_k14336 $carry/lift/slide6to8_f16_m4096_n18944_k3584 > "$out/ncu_68.txt" 2>&1
grep -E "sgpu_|Duration|ran " "$out/ncu_68.txt"
