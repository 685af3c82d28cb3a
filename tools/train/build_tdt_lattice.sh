#!/usr/bin/env bash
# Builds the CUDA TDT lattice (tools/train/tdt_lattice.cu) as a shared library for tdt_lattice_cuda.py:
#   tools/train/build_tdt_lattice.sh OUT_DIR     -> OUT_DIR/libsteno_tdt_lattice.so
# No PyTorch headers, so it takes seconds; run it on the GPU machine (nvcc 13 there) or here with
# CUDA_ARCH=90 for the H200. The CUDA runtime is linked statically: the library needs only the driver.
set -euo pipefail
out=$1
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
arch=${CUDA_ARCH:-90}
mkdir -p "$out"
"$nvcc" -O3 -std=c++17 -shared -Xcompiler -fPIC -cudart static \
  -gencode "arch=compute_$arch,code=[sm_$arch,compute_$arch]" \
  -o "$out/libsteno_tdt_lattice.so" "$(dirname "$0")/tdt_lattice.cu"
echo "$out/libsteno_tdt_lattice.so"
