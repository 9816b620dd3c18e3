#!/usr/bin/env bash
# The demo command of the README: bootstrap Kokkos (OpenMP) if needed, build
# gdn and the speculative-decoding demo (nothing else), run the demo. Arguments are
# passed to the demo (try --help).
source "$(dirname "$0")/lib.sh"
ensure_packages
kokkos=$(kokkos_prefix openmp)
# Only the library and the demo: scripts/test.sh builds the rest in the same build folder.
dir=$(GDN_BUILD_TARGETS=gdn_speculative_demo configure_and_build openmp "$kokkos" -DGDN_ENABLE_EXAMPLES=ON)
export OMP_PROC_BIND=${OMP_PROC_BIND:-false} OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
exec "$dir/examples/02_speculative_decoding/gdn_speculative_demo" "$@"
