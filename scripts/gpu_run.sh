#!/usr/bin/env bash
# Everything the GPU machine does, in one command (the device tool runs it in
# the repository root with the patched Kokkos tarball, and any --baseline
# tarballs, carried in .deps/):
#   bash scripts/gpu_run.sh [--bench REGEX] [--tests] [--baseline [NAME=]TARBALL ...] [--fla TARBALL] [--sanitize] [--ncu REGEX]
# Steps run in this order, each logged under $OUT (default ./out):
#   --tests        ctest -L cuda -LE python (CUDA test suite + install consumer)
#   --python       also build the Python module (the interpreter: GDN_PYTHON, else the
#                  python3 that imports torch; pybind11 through `python -m pybind11
#                  --cmakedir` or CMake's search), run its pytest suite, CPU and CUDA
#                  files (ctest -L python -> pytest.log), then perf/python_overhead.py
#                  -> python_overhead.txt
#   --sanitize     compute-sanitizer racecheck and memcheck over the CUDA
#                  tests, each test in a process of its own, GDN_SANITIZE_JOBS
#                  (default 8) side by side (GDN_RACECHECK_FILTER /
#                  GDN_MEMCHECK_FILTER select a gtest subset, default all;
#                  logs in sanitizer_<tool>/, one line per tool in the summary)
#   --bench RE     gdn_bench --benchmark_filter=RE -> bench_cuda.{json,md,txt},
#                  then gdn_launch_probe -> launch_probe.txt
#                  (GDN_BENCH_REPETITIONS=N: median of N interleaved repetitions)
#   --baseline [NAME=]F  with --bench: build the gdn sources of tarball F
#                  (`git archive` of an earlier commit) with this tree's perf/
#                  drivers (they use only the public API; cases that gdn lacks
#                  are not registered) and run the same filter ->
#                  bench_NAME.{json,txt,md} (NAME: letters, digits, . _ -;
#                  default baseline). Given again, one build and run per NAME.
#                  The baselines build in the background beside this tree
#                  (build_NAME.log), and the bench runs the builds in this
#                  order: this tree (bench_cuda), each baseline in the order
#                  given, this tree again (bench_cuda_again); the two runs of
#                  this tree bracket the baselines, so a drift of the machine
#                  shows as a difference between them.
#                  tools/profiling/ab.py then tabulates all runs against
#                  the first baseline -> ab.txt
#   --fla F        with --bench: unpack the tarball F (a snapshot of fla, flash-linear-attention,
#                  with its fla/ package at its top or one folder down) and run
#                  perf/fla_anchor.py with python3 after the benches: fla's kernels on the
#                  bench's shapes -> fla.json, fla.txt (docs/performance.md's anchors)
#   --ncu RE       ncu (clocks untouched) on the first gdn kernel of the first
#                  benchmark matching RE (GDN_NCU_KERNEL: kernel regex) ->
#                  ncu_details.txt, ncu_source_sass.csv.gz; given again, the
#                  second and later profiles go to ncu<N>_details.txt, ...;
#                  then the disassembly with source lines
#                  (tools/profiling/sass_lines.py -> sass_lines.txt.gz) and
#                  each profile's instructions by source line
#                  (tools/profiling/sass_breakdown.py --lines -> ncu_lines.txt;
#                  GDN_NCU_ITEMS: work items x warps, default 65536)
# A summary line per step is printed as it completes (and kept in summary.txt).
# GDN_PACK=FILE (a path outside $OUT): when the script exits, for whatever
# reason, everything under $OUT but ncu's report goes into the tarball FILE,
# one file for tools that bring back only a few (the device tool), e.g.
#   P=$OUT/r.tgz; OUT=$(mktemp -d) GDN_PACK=$P bash scripts/gpu_run.sh --tests
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-$GDN_ROOT/out}
mkdir -p "$OUT"
# On exit, for whatever reason: the baseline builds still running are stopped (each runs in a
# process group of its own), then $OUT is packed (GDN_PACK).
build_pids=()
on_exit() {
  local p
  for p in "${build_pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  if [ -n "${GDN_PACK:-}" ]; then
    tar czf "$GDN_PACK" --exclude='*.ncu-rep' -C "$OUT" . || log "packing $OUT failed"
  fi
}
trap on_exit EXIT
do_tests=0 do_san=0 do_py=0 bench="" fla=""
baselines=() ncu_res=()  # baselines: NAME=TARBALL, in the order given
add_baseline() {  # [NAME=]TARBALL (an argument that names a file is a tarball, '=' or not)
  local name=baseline f=$1 b
  if [ ! -f "$1" ] && [[ $1 =~ ^([A-Za-z0-9._-]+)=(.+)$ ]]; then
    name=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
  fi
  [ -f "$f" ] || { log "--baseline $1: no file $f"; exit 2; }
  case $name in cuda|cuda_again) log "--baseline $1: bench_$name is this tree's"; exit 2 ;; esac
  for b in "${baselines[@]}"; do
    [ "${b%%=*}" != "$name" ] || { log "--baseline $1: the name $name is given twice"; exit 2; }
  done
  baselines+=("$name=$f")
}
while [ $# -gt 0 ]; do
  case $1 in
    --tests) do_tests=1 ;;
    --python) do_py=1 ;;
    --sanitize) do_san=1 ;;
    --bench) bench=$2; shift ;;
    --baseline) add_baseline "$2"; shift ;;
    --fla) fla=$2; [ -f "$fla" ] || { log "--fla $fla: no such file"; exit 2; }; shift ;;
    --ncu) ncu_res+=("$2"); shift ;;
    *) log "unknown option $1"; exit 2 ;;
  esac
  shift
done
say() { echo "[$((SECONDS))s] $*" | tee -a "$OUT/summary.txt"; }
bench_table() { grep -E '^(fwd|verify|fold|prefill)' "$1" | sed 's|/iterations:1/manual_time||' | awk '{printf "%-44s", $1; for (i=2;i<=NF;i++) if ($i ~ /^(time_us|gpu_us|copy_us|GB\/s|bw_frac|roofline_frac)=/) printf " %s", $i; print ""}'; }
# GDN_BENCH_REPETITIONS=N (> 1): every case measured N times, in random order, and reported as
# the median of the N (Google Benchmark aggregates; perf/render.py shows the medians).
reps=()
if [ "${GDN_BENCH_REPETITIONS:-1}" -gt 1 ]; then
  reps=("--benchmark_repetitions=$GDN_BENCH_REPETITIONS" --benchmark_enable_random_interleaving=true)
fi
run_bench() {  # dir name
  say "gdn_bench ($2)"
  "$1/perf/gdn_bench" --benchmark_filter="$bench" --benchmark_out="$OUT/bench_$2.json" "${reps[@]}" \
    --benchmark_out_format=json --benchmark_counters_tabular=false > "$OUT/bench_$2.txt" 2>&1 || say "gdn_bench ($2) failed"
  bench_table "$OUT/bench_$2.txt" | tee -a "$OUT/summary.txt" || true  # no rows: no case matched
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt" 2>&1 || true
kokkos=$(kokkos_prefix cuda)
say "kokkos ready"
# The baselines (with --bench): sources in build/baseline-NAME-src, build in
# build/cuda-baseline-NAME, each in the background (a process group of its own,
# set -m) while this tree builds. The script waits for them right after its own
# build, before any test or bench runs beside a compiler.
build_baseline() {  # NAME TARBALL
  local src=$GDN_ROOT/build/baseline-$1-src bdir=$GDN_ROOT/build/cuda-baseline-$1
  rm -rf "$src" && mkdir -p "$src" && tar xzf "$2" -C "$src" &&
    cp "$GDN_ROOT"/perf/bench_gdn.cpp "$GDN_ROOT"/perf/machine.cpp "$GDN_ROOT"/perf/machine.hpp "$src/perf/" &&
    cmake -S "$src" -B "$bdir" -DCMAKE_BUILD_TYPE=Release "-DKokkos_ROOT=$kokkos" \
      "-DCMAKE_CXX_COMPILER=$kokkos/bin/nvcc_wrapper" -DGDN_ENABLE_TESTS=OFF -DGDN_ENABLE_EXAMPLES=OFF \
      -DGDN_ENABLE_BENCHMARKS=ON &&
    cmake --build "$bdir" -j "$JOBS" --target gdn_bench
}
if [ -n "$fla" ] && [ -z "$bench" ]; then
  say "--fla without --bench: fla not measured"
fi
if [ ${#baselines[@]} -gt 0 ] && [ -z "$bench" ]; then
  say "--baseline without --bench: no baseline built"
  baselines=()
fi
for b in "${baselines[@]}"; do
  set -m
  build_baseline "${b%%=*}" "${b#*=}" > "$OUT/build_${b%%=*}.log" 2>&1 &
  build_pids+=($!)
  set +m
done
pyargs=()
if [ "$do_py" = 1 ]; then
  py=$(gdn_python)
  mapfile -t pyargs < <(python_cmake_args "$py")
  say "python: $py ($("$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1))"
fi
dir=$(configure_and_build cuda "$kokkos" -DGDN_ENABLE_TESTS=ON -DGDN_ENABLE_EXAMPLES=ON -DGDN_ENABLE_BENCHMARKS=ON "${pyargs[@]}" 2>"$OUT/build.log") ||
  { say "gdn build failed:"; tail -30 "$OUT/build.log"; exit 1; }
say "gdn built"
built=()  # the baselines that built, NAME=TARBALL
for i in "${!baselines[@]}"; do
  b=${baselines[$i]}
  if wait "${build_pids[$i]}"; then
    say "baseline ${b%%=*} built (${b#*=})"
    built+=("$b")
  else
    say "baseline ${b%%=*}: build failed (build_${b%%=*}.log)"
  fi
done
build_pids=()
if [ "$do_tests" = 1 ]; then
  (cd "$dir" && ctest -L cuda -LE python --output-on-failure --no-tests=error) > "$OUT/ctest_cuda.log" 2>&1 && r=pass || r=FAIL
  say "ctest -L cuda: $r: $(grep -E 'tests passed|tests failed' "$OUT/ctest_cuda.log" | tail -1)"
  "$dir/tests/gdn_tests_cuda" > "$OUT/gtest_cuda.log" 2>&1 || true
  say "gtest: $(grep -E '^\[  (PASSED|FAILED) |^\[==========\] [0-9]+ tests' "$OUT/gtest_cuda.log" | tr '\n' ' ')"
fi
if [ "$do_py" = 1 ]; then
  (cd "$dir" && ctest -L python -V --no-tests=error) > "$OUT/pytest.log" 2>&1 && r=pass || r=FAIL
  say "pytest (ctest -L python): $r: $(grep -E '[0-9]+ (passed|failed)' "$OUT/pytest.log" | tail -1)"
  PYTHONPATH=$dir/python OMP_PROC_BIND=false "$py" "$GDN_ROOT/perf/python_overhead.py" \
    > "$OUT/python_overhead.txt" 2>&1 || say "perf/python_overhead.py failed (python_overhead.txt)"
  tee -a "$OUT/summary.txt" < "$OUT/python_overhead.txt"
fi
# The sanitizers: every test that GDN_RACECHECK_FILTER / GDN_MEMCHECK_FILTER
# selects, in a process of its own under compute-sanitizer --tool TOOL, the
# racecheck and memcheck processes GDN_SANITIZE_JOBS at a time from one queue
# (racecheck's first: the tests of the runs take minutes each under it, and
# the whole suite in one process does not finish in a device call). A
# process's log is sanitizer_TOOL/SUITE.TEST.log (a / in the name as _; its
# wall time on its last line); sanitizer_TOOL/failed.txt lists the tests
# whose process exited non-zero (a finding: exit code 7, or a failed test).
# A tool is clean when every process exited 0, ran its one test (passed or
# skipped) and ended with a summary of 0 findings.
sanitize_list() {  # TOOL FILTER: "TOOL SUITE.TEST" lines
  OMP_PROC_BIND=false "$dir/tests/gdn_tests_cuda" --gtest_list_tests --gtest_filter="$2" 2>/dev/null |
    awk -v tool="$1" '/^[A-Za-z0-9_\/]+\.( |$)/ {s = $1; next} s != "" && /^  [A-Za-z0-9_]/ {print tool, s $1}'
}
sanitize_report() {  # TOOL FILTER SECONDS
  local d=$OUT/sanitizer_$1 n bad clean ran r=clean
  touch "$d/failed.txt"
  n=$(grep -c "^$1 " "$OUT/sanitizer_queue.txt" || true)
  bad=$(wc -l < "$d/failed.txt")
  clean=$(cat "$d"/*.log 2>/dev/null | grep -cE '(RACECHECK SUMMARY: 0 hazards|ERROR SUMMARY: 0 errors)' || true)
  ran=$(cat "$d"/*.log 2>/dev/null | grep -cE '(PASSED  \] 1 test\.|SKIPPED \] 1 test)' || true)  # its test ran
  [ "$bad" -eq 0 ] && [ "$clean" -eq "$n" ] && [ "$ran" -eq "$n" ] || r=FAIL
  say "compute-sanitizer $1 ($2): $r: $n tests, $ran ran (passed or skipped), $bad processes failed, $clean logs with 0 findings ($3 s for both tools)"
}
if [ "$do_san" = 1 ]; then
  t0=$SECONDS
  mkdir -p "$OUT/sanitizer_racecheck" "$OUT/sanitizer_memcheck"
  { sanitize_list racecheck "${GDN_RACECHECK_FILTER:-*}"; sanitize_list memcheck "${GDN_MEMCHECK_FILTER:-*}"; } \
    > "$OUT/sanitizer_queue.txt"
  GDN_SAN_OUT=$OUT GDN_SAN_BIN=$dir/tests/gdn_tests_cuda xargs -P "${GDN_SANITIZE_JOBS:-8}" -L 1 bash -c '
    s=$SECONDS log=$GDN_SAN_OUT/sanitizer_$1/${2//\//_}.log  # value-parameterized names hold a /
    compute-sanitizer --tool "$1" --error-exitcode 7 "$GDN_SAN_BIN" --gtest_brief=1 \
      --gtest_filter="$2" > "$log" 2>&1 || echo "$2 (exit $?)" >> "$GDN_SAN_OUT/sanitizer_$1/failed.txt"
    echo "wall $((SECONDS - s)) s" >> "$log"' _ < "$OUT/sanitizer_queue.txt"
  sanitize_report racecheck "${GDN_RACECHECK_FILTER:-all}" $((SECONDS - t0))
  sanitize_report memcheck "${GDN_MEMCHECK_FILTER:-all}" $((SECONDS - t0))
fi
# The bench: this tree, then each baseline that built, then this tree again (bench_cuda_again).
render_bench() {  # name
  python3 "$GDN_ROOT/perf/render.py" "$OUT/bench_$1.json" "$OUT/bench_$1.md" >/dev/null 2>&1 || true
  grep -E '^gdn_bench: (copy_bw|fp32_peak)' "$OUT/bench_$1.txt" | tee -a "$OUT/summary.txt" || true
}
if [ -n "$bench" ]; then
  run_bench "$dir" cuda
  render_bench cuda
  if [ ${#built[@]} -gt 0 ]; then
    runs=("cuda=$OUT/bench_cuda.json")
    for b in "${built[@]}"; do
      run_bench "$GDN_ROOT/build/cuda-baseline-${b%%=*}" "${b%%=*}"
      render_bench "${b%%=*}"
      runs+=("${b%%=*}=$OUT/bench_${b%%=*}.json")
    done
    run_bench "$dir" cuda_again
    render_bench cuda_again
    runs+=("cuda_again=$OUT/bench_cuda_again.json")
    # Every case: each run's time and fraction of the roofline, and each against the first baseline.
    python3 "$GDN_ROOT/tools/profiling/ab.py" "${runs[@]}" --field time_us --frac --ref "${built[0]%%=*}" \
      > "$OUT/ab.txt" 2>&1 || say "tools/profiling/ab.py failed (ab.txt)"
    tee -a "$OUT/summary.txt" < "$OUT/ab.txt"
  fi
  if [ -n "$fla" ]; then
    fla_src=$GDN_ROOT/build/fla-src
    rm -rf "$fla_src" && mkdir -p "$fla_src" && tar xzf "$fla" -C "$fla_src"
    fla_pkg=$(find "$fla_src" -maxdepth 2 -type d -name fla | head -1)
    if [ -z "$fla_pkg" ]; then
      say "--fla $fla: no fla/ package in the tarball (at its top or one folder down)"
    else
      say "fla anchors (perf/fla_anchor.py, fla from $fla)"
      PYTHONPATH=$(dirname "$fla_pkg") "$(gdn_python)" "$GDN_ROOT/perf/fla_anchor.py" \
        --out "$OUT/fla.json" > "$OUT/fla.txt" 2>&1 || say "perf/fla_anchor.py failed (fla.txt)"
      tee -a "$OUT/summary.txt" < "$OUT/fla.txt"
    fi
  fi
  "$dir/tools/profiling/gdn_launch_probe" > "$OUT/launch_probe.txt" 2>&1 || say "gdn_launch_probe failed"
  grep -E 'fenced' "$OUT/launch_probe.txt" | tee -a "$OUT/summary.txt" || true
fi
n=0
for ncu_re in "${ncu_res[@]}"; do
  n=$((n + 1)); p=ncu; [ "$n" -gt 1 ] && p=ncu$n
  ncu --clock-control none --set full --kernel-name-base demangled -k "regex:${GDN_NCU_KERNEL:-TokenKernel}" --launch-skip 2 --launch-count 1 -o "$OUT/$p" \
    "$dir/perf/gdn_bench" --benchmark_filter="$ncu_re" > "$OUT/$p.log" 2>&1 || true
  ncu --import "$OUT/$p.ncu-rep" --page details > "$OUT/${p}_details.txt" 2>&1 || true
  ncu --import "$OUT/$p.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$OUT/${p}_source_sass.csv.gz" || true
  say "$p ($ncu_re): $(grep -cE 'Duration|Throughput' "$OUT/${p}_details.txt") lines of metrics"
  # Each profiled instruction's source line (tools/profiling/sass_lines.py; the disassembly once).
  if [ "$n" = 1 ]; then
    python3 "$GDN_ROOT/tools/profiling/sass_lines.py" "$dir" "$OUT/sass_lines.txt.gz" \
      > "$OUT/sass_lines.log" 2>&1 || say "tools/profiling/sass_lines.py failed (sass_lines.log)"
  fi
  if [ -f "$OUT/sass_lines.txt.gz" ]; then
    python3 "$GDN_ROOT/tools/profiling/sass_breakdown.py" "$OUT/${p}_source_sass.csv.gz" \
      --items "${GDN_NCU_ITEMS:-65536}" --lines "$OUT/sass_lines.txt.gz" --depth 1 \
      > "$OUT/${p}_lines.txt" 2>&1 || true
    say "$p: $(grep -E '^source lines' "$OUT/${p}_lines.txt" | sed 's/kernel .*\.\.\., //')"
  fi
done
say "done"
