#!/usr/bin/env bash
# Build and run the gdn benchmarks, then render the results as markdown.
#   perf/run.sh [OUTDIR] [gdn_bench args...]
# OUTDIR defaults to docs/perf. The backend is CUDA when `nvidia-smi -L`
# finds a GPU, OpenMP otherwise; the build goes to build/<variant>-perf and
# the results to OUTDIR/bench_<variant>.json and OUTDIR/bench_<variant>.md.
# Extra arguments go to gdn_bench, e.g. --benchmark_filter='verify/D128/.*'.
# Knobs (environment): GDN_BENCH_MAX_BATCH, GDN_BENCH_MAX_GIB,
# GDN_BENCH_MIN_TIME (perf/bench_gdn.cpp), OMP_NUM_THREADS, Kokkos_ROOT.
source "$(dirname "$0")/../scripts/lib.sh"

outdir=${1:-$GDN_ROOT/docs/perf}
[ $# -gt 0 ] && shift
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

if nvidia-smi -L >/dev/null 2>&1; then
  variant=cuda
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
else
  variant=openmp
  export OMP_PROC_BIND=${OMP_PROC_BIND:-false}
fi

ensure_packages
kokkos=$(kokkos_prefix "$variant")
dir=$(configure_and_build "$variant-perf" "$kokkos" -DGDN_ENABLE_BENCHMARKS=ON \
  -DGDN_ENABLE_TESTS=OFF -DGDN_ENABLE_EXAMPLES=OFF)

json=$outdir/bench_$variant.json
log "running $dir/perf/gdn_bench -> $json"
"$dir/perf/gdn_bench" --benchmark_out="$json" --benchmark_out_format=json "$@"
python3 "$GDN_ROOT/perf/render.py" "$json" "$outdir/bench_$variant.md"
log "wrote $outdir/bench_$variant.md"
