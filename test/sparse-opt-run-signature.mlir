// sparse-opt-run takes each tensor's element type from signature.json and
// refuses a signature that disagrees with the program; run here against the
// stand-in CUDA driver and NCCL of the runtime's unit tests (no GPU needed):
// a one-rank all-reduce copies its f32 input to its output.
// RUN: rm -rf %t && mkdir -p %t/nccl && cp -r %S/Inputs/allreduce-f32 %t/art
// RUN: env SPARSEOPT_CUDA_LIBRARY=%sparse_opt_obj/test/Unit/Runtime/libsparseopt_fake_cuda_nccl.so SPARSEOPT_NCCL_LIBRARY=%sparse_opt_obj/test/Unit/Runtime/libsparseopt_fake_cuda_nccl.so SPARSEOPT_FAKE_NCCL_DIR=%t/nccl sparse-opt-run %t/art --iters 1 --warmup 0 | FileCheck %s
// CHECK: communicator: rank 0 of 1
// CHECK: output 0: 64 bytes, checksum {{-?[0-9.]+}} (f32)
//
// Negative dimensions whose product matches the buffer are refused.
// RUN: printf '{"function": "f", "inputs": [{"shape": [-4, -4], "dtype": "f32"}], "outputs": [{"shape": [16], "dtype": "f32"}]}' > %t/art/signature.json
// RUN: not sparse-opt-run %t/art 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: signature.json: input 0 dimension 0 is -4: every dimension must be a positive integer
