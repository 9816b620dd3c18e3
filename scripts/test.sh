#!/usr/bin/env bash
# The test command of the README: bootstrap Kokkos (OpenMP) if needed, build
# gdn with its tests and the Python module, run them with ctest (label openmp;
# the pytest suite of python/tests is the test gdn_python).
#   scripts/test.sh              OpenMP build, ctest -L openmp
#   scripts/test.sh --sanitize   the C++ suite under -fsanitize=address,undefined
#                                (build/openmp-asan, with the installed package's portable
#                                -march; without the Python module, which
#                                would need the sanitizer runtime preloaded into python)
source "$(dirname "$0")/lib.sh"
name=openmp
flags=()
packages=("${GDN_PYTHON_PACKAGES[@]}")
if [ "${1:-}" = --sanitize ]; then
  name=openmp-asan
  # The installed package's portable -march (GDN_HOST_ARCH), so CI builds it too.
  flags=(-DGDN_ENABLE_SANITIZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGDN_ENABLE_NATIVE_ARCH=OFF)
  packages=()
fi
ensure_packages "${packages[@]}"
if [ "$name" = openmp ]; then
  mapfile -t pyargs < <(python_cmake_args "$(gdn_python)")
  flags+=("${pyargs[@]}")
fi
kokkos=$(kokkos_prefix openmp)
dir=$(configure_and_build "$name" "$kokkos" -DGDN_ENABLE_TESTS=ON -DGDN_ENABLE_EXAMPLES=ON "${flags[@]}")
export OMP_PROC_BIND=false OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
if [ "$name" = openmp-asan ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
(cd "$dir" && ctest -L openmp --output-on-failure --no-tests=error)
