#!/usr/bin/env bash
# The test command of the README: bootstrap Kokkos (OpenMP) if needed, build
# gdn with its tests, run them with ctest (label openmp).
#   scripts/test.sh              OpenMP build, ctest -L openmp
#   scripts/test.sh --sanitize   the same under -fsanitize=address,undefined (build/openmp-asan)
source "$(dirname "$0")/lib.sh"
name=openmp
flags=()
if [ "${1:-}" = --sanitize ]; then
  name=openmp-asan
  flags=(-DGDN_ENABLE_SANITIZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
fi
ensure_packages
kokkos=$(kokkos_prefix openmp)
dir=$(configure_and_build "$name" "$kokkos" -DGDN_ENABLE_TESTS=ON -DGDN_ENABLE_EXAMPLES=ON "${flags[@]}")
export OMP_PROC_BIND=false OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
if [ "$name" = openmp-asan ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
(cd "$dir" && ctest -L openmp --output-on-failure --no-tests=error)
