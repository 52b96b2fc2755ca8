source bench/device_env.sh /tmp/mid-out
for v in t128 s7 regs regs_s7; do
  step "2:4 at 512 tokens: $v"
  timeout 100 python3 bench/spmm/run_spmm.py --set mid --artifacts "$carry/mid_$v" --commit "$commit" --options "$v" \
    --command "python3 bench/spmm/run_spmm.py --set mid --artifacts .carry/mid_$v" --out "$out/spmm_mid_epi_$v.json" 2>&1 | cut -c1-200 | tail -7
done
step "correctness"
timeout 150 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --artifacts "$carry/corr" --commit "$commit" \
  --command "python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --artifacts .carry/corr" --out "$out/spmm_correctness_h200.json" 2>&1 | tail -2
