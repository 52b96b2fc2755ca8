#!/usr/bin/env bash
# The GPU machine's half of the ladder benchmark and the collective tests,
# on a machine of two GPUs (the one-GPU parts run on GPU 0). Everything it
# needs was built on the compiler's machine into .carry/:
#   lib/        libsparseopt_runtime.so, libsparseopt_formats.so
#   bin/        SparseOptCollectivesTests, SparseOptRuntimeTests
#   coll/       python3 test/python/test_gpu_collectives.py --compile .carry/coll
#   ladder_tp1/ python3 bench/ladder/make_stack.py --out .carry/ladder_tp1 --tp 1
#   ladder_tp2/ python3 bench/ladder/make_stack.py --out .carry/ladder_tp2 --tp 2 \
#                 --d 8192 --ffn 28672
# Results go to $OUT (default /tmp/ladder-out). Phases (arguments, default
# all): tests, tp1, tp2.
source "$(dirname "$0")/../device_env.sh" /tmp/ladder-out
# Never NVLink multicast on shared hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SPARSEOPT_LIB_DIR="$carry/lib"
nccl_lib="$(python3 -c 'import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], "lib"))')"
export LD_LIBRARY_PATH="$carry/lib:$nccl_lib:${LD_LIBRARY_PATH:-}"
phases="${*:-tests tp1 tp2}"
has() { case " $phases " in *" $1 "*) return 0;; esac; return 1; }

if has tests; then
step "runtime unit tests (GPU 0)"
CUDA_VISIBLE_DEVICES=0 timeout 180 "$carry/bin/SparseOptCollectivesTests" > "$out/gtest_collectives.txt" 2>&1
tail -4 "$out/gtest_collectives.txt"
CUDA_VISIBLE_DEVICES=0 timeout 180 "$carry/bin/SparseOptRuntimeTests" --gtest_filter='Gpu.*' 2>&1 | tail -3

step "GPU tests of collectives (GPU 0)"
CUDA_VISIBLE_DEVICES=0 SPARSEOPT_BUILD_DIR="$carry" SPARSEOPT_GPU_COLLECTIVE_ARTIFACTS="$carry/coll" \
  timeout 300 python3 -m pytest -q -s test/python/test_gpu_collectives.py 2>&1 | tail -15
if [ -d "$carry/wt" ]; then
  step "GPU tests of weight arguments (GPU 0), regression"
  CUDA_VISIBLE_DEVICES=0 SPARSEOPT_BUILD_DIR="$carry" SPARSEOPT_GPU_WEIGHT_ARTIFACTS="$carry/wt" \
    timeout 200 python3 -m pytest -q test/python/test_gpu_weights.py 2>&1 | tail -3
fi
fi

if has tp1; then
step "ladder stack, TP 1 (GPU 0)"
CUDA_VISIBLE_DEVICES=0 timeout 400 python3 bench/ladder/run_ladder.py \
  --artifacts "$carry/ladder_tp1" --out "$out/ladder_tp1_h200.json" --overlap --label tp1
fi

if has tp2 && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  # The ranks show rank 0 this secret before it hands out the NCCL id.
  export SPARSEOPT_COMM_TOKEN="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  step "ladder stack, TP 2, NVLink"
  timeout 400 torchrun --standalone --nproc-per-node=2 bench/ladder/run_ladder.py \
    --artifacts "$carry/ladder_tp2" --out "$out/ladder_tp2_h200.json" --overlap --label tp2
  step "ladder stack, TP 2, NCCL_P2P_DISABLE=1"
  NCCL_P2P_DISABLE=1 timeout 400 torchrun --standalone --nproc-per-node=2 bench/ladder/run_ladder.py \
    --artifacts "$carry/ladder_tp2" --out "$out/ladder_tp2_nop2p_h200.json" --overlap --label tp2-nop2p
fi
ls -la "$out"
