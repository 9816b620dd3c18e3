#!/usr/bin/env bash
# Everything the GPU machine does, in one command (the device tool runs it in
# the repository root with the patched Kokkos tarball carried in .deps/):
#   bash scripts/gpu_run.sh [--tests] [--sanitize] [--bench REGEX] [--ncu REGEX]
# --tests      ctest -L cuda (CUDA test suite + install consumer)
# --sanitize   compute-sanitizer memcheck and racecheck over the CUDA tests
#              (GDN_SANITIZE_FILTER selects a gtest subset, default all)
# --bench RE   gdn_bench --benchmark_filter=RE; results as JSON + markdown
# --ncu RE     ncu (clocks untouched) on the first benchmark matching RE
# Logs and results go to $OUT (default ./out). Prints a short summary last.
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-$GDN_ROOT/out}
mkdir -p "$OUT"
do_tests=0 do_san=0 bench="" ncu_re=""
while [ $# -gt 0 ]; do
  case $1 in
    --tests) do_tests=1 ;;
    --sanitize) do_san=1 ;;
    --bench) bench=$2; shift ;;
    --ncu) ncu_re=$2; shift ;;
    *) log "unknown option $1"; exit 2 ;;
  esac
  shift
done
summary=()
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt" 2>&1 || true
kokkos=$(kokkos_prefix cuda)
summary+=("kokkos bootstrap+build: $((SECONDS - t0)) s")
t1=$SECONDS
dir=$(configure_and_build cuda "$kokkos" -DGDN_ENABLE_TESTS=ON -DGDN_ENABLE_EXAMPLES=ON -DGDN_ENABLE_BENCHMARKS=ON 2>"$OUT/build.log")
summary+=("gdn build: $((SECONDS - t1)) s")
if [ "$do_tests" = 1 ]; then
  if (cd "$dir" && ctest -L cuda --output-on-failure) > "$OUT/ctest_cuda.log" 2>&1; then r=pass; else r=FAIL; fi
  summary+=("ctest -L cuda: $r ($(grep -E 'tests passed|tests failed' "$OUT/ctest_cuda.log" | tail -1))")
  "$dir/tests/gdn_tests_cuda" --gtest_brief=1 > "$OUT/gtest_cuda.log" 2>&1 || true
  summary+=("gtest: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gtest_cuda.log" | tr '\n' ' ')")
fi
if [ "$do_san" = 1 ]; then
  f=${GDN_SANITIZE_FILTER:-*}
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 7 "$dir/tests/gdn_tests_cuda" --gtest_brief=1 \
      --gtest_filter="$f" > "$OUT/sanitizer_$tool.log" 2>&1 && r=clean || r="FAIL($?)"
    summary+=("compute-sanitizer $tool: $r; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)")
  done
fi
if [ -n "$bench" ]; then
  "$dir/perf/gdn_bench" --benchmark_filter="$bench" --benchmark_out="$OUT/bench_cuda.json" \
    --benchmark_out_format=json > "$OUT/bench_cuda.txt" 2>&1 || summary+=("gdn_bench failed")
  python3 "$GDN_ROOT/perf/render.py" "$OUT/bench_cuda.json" "$OUT/bench_cuda.md" || true
fi
if [ -n "$ncu_re" ]; then
  ncu --clock-control none --set full -k regex:gdn --launch-count 1 -o "$OUT/ncu" \
    "$dir/perf/gdn_bench" --benchmark_filter="$ncu_re" --benchmark_min_time=0.01 > "$OUT/ncu.log" 2>&1 || true
  ncu --import "$OUT/ncu.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1 || true
fi
printf '%s\n' "${summary[@]}"
[ -z "$bench" ] || grep -E '^(fwd|verify|fold|copy)' "$OUT/bench_cuda.txt" | cut -c1-160 | tail -60
