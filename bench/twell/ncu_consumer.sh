#!/bin/bash
# Memory-system metrics of the TwELL consumer and pack kernels (one launch
# each): whether the consumer is bound by L2 or DRAM bandwidth. Run on the
# GPU machine from the repository root, with SPARSEOPT_LIB_DIR set:
#   bash bench/twell/ncu_consumer.sh <artifact dir of make_ffn.py> [fraction]
# e.g. .carry/tw1/gated_bf16_m16384_d2048_f5632 0.005
set -e
metrics=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct
metrics=$metrics,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
artifact="${1:?usage: ncu_consumer.sh <artifact dir> [fraction]}"
ncu --metrics $metrics -k regex:sgpu_twell_ffn_0\|sgpu_twell_pack_0 -c 2 \
  python3 bench/twell/profile_ffn.py --artifact "$artifact" --fractions "${2:-0.005}" --reps 1
