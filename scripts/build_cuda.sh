#!/usr/bin/env bash
# Compile (no run) gdn, its tests, examples, benchmarks and the Python module
# against the CUDA Kokkos build with nvcc for sm_90. Used by CI, where no GPU
# exists; on the GPU machine, scripts/gpu_run.sh builds and runs.
source "$(dirname "$0")/lib.sh"
ensure_packages "${GDN_PYTHON_PACKAGES[@]:0:2}"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
kokkos=$(kokkos_prefix cuda)
mapfile -t pyargs < <(python_cmake_args "$(gdn_python)")
configure_and_build cuda "$kokkos" -DGDN_ENABLE_TESTS=ON -DGDN_ENABLE_EXAMPLES=ON \
  -DGDN_ENABLE_BENCHMARKS=ON "${pyargs[@]}" >/dev/null
log "CUDA build compiled: build/cuda"
