#!/usr/bin/env bash
# Installs what SparseOpt needs on Debian 12, idempotently: only missing
# packages are installed, and `apt-get update` runs only when something is
# missing. The CUDA 13 toolkit (nvcc, ptxas, cuda.h) is not a Debian package:
# install it from NVIDIA under /usr/local/cuda (or set CUDA_HOME).
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ ccache
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libgtest-dev
  clang-22 libfuzzer-22-dev
  python3 python3-numpy python3-pytest python3-torch python3-onnx
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda_home/include/cuda.h" ]; then
  echo "setup: error: the CUDA toolkit was not found at $cuda_home (cuda.h)." >&2
  echo "       Install CUDA 13 from NVIDIA (https://developer.nvidia.com/cuda-downloads)" >&2
  echo "       or point CUDA_HOME at it. The runtime builds against its headers only;" >&2
  echo "       ptxas, if present, assembles the generated PTX in the tests." >&2
  exit 1
fi
# The runtime opens cuDNN 9 at run time for the programs' attention lines;
# building needs only its graph API header beside cuda.h.
if [ ! -f "$cuda_home/include/cudnn_graph.h" ]; then
  echo "setup: error: cuDNN 9's header cudnn_graph.h was not found in $cuda_home/include." >&2
  echo "       Install cuDNN 9 for CUDA 13 into the toolkit (https://developer.nvidia.com/cudnn)" >&2
  echo "       or point CUDA_HOME at a toolkit that has it." >&2
  exit 1
fi
