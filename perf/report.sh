#!/usr/bin/env bash
# Regenerate everything docs/performance.md shows from the benchmark JSON files:
#   bash perf/report.sh [DIR [PAGE]]
# DIR defaults to docs/perf, PAGE to docs/performance.md.
#   - From DIR/bench_cuda.json (scripts/gpu_run.sh --bench), DIR/release_*.json (an
#     earlier release's bench_NAME.json of the same kind of run) and DIR/fla.json
#     (perf/fla_anchor.py): the first screen, PAGE's table between the overview
#     markers and DIR/overview.png (perf/overview.py).
#   - For every DIR/bench_NAME.json:
#       DIR/bench_NAME.md          every case (perf/render.py)
#       PAGE                       the short tables between the markers of
#                                  bench_NAME.json (perf/render.py --summary;
#                                  not for bench_cuda.json, shown by the overview)
#   - For DIR/bench_openmp.json (perf/run.sh), the CPU plots
#     DIR/openmp_time_vs_{T,B}.png (perf/plot.py).
# Installs python3-matplotlib (Debian) when missing; needs no build and no GPU.
source "$(dirname "$0")/../scripts/lib.sh"

dir=${1:-$GDN_ROOT/docs/perf}
page=${2:-$GDN_ROOT/docs/performance.md}
ensure_debian_packages python3 python3-matplotlib
# Debian's matplotlib is installed for Debian's python3; another python3 first on PATH
# (a virtual environment, pyenv) may not see it.
py=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && [ -x /usr/bin/python3 ]; then
  py=/usr/bin/python3
fi

shopt -s nullglob
files=("$dir"/bench_*.json)
[ ${#files[@]} -gt 0 ] || { log "no bench_*.json in $dir"; exit 1; }
if [ -f "$dir/bench_cuda.json" ]; then
  args=(--gdn "$dir/bench_cuda.json")
  for r in "$dir"/release_*.json; do
    n=$(basename "$r" .json)
    args+=(--release "${n#release_}=$r")
    break  # one release column
  done
  [ -f "$dir/fla.json" ] && args+=(--fla "$dir/fla.json")
  "$py" "$GDN_ROOT/perf/overview.py" "${args[@]}" "$page" "$dir/overview.png"
  log "${args[*]} -> the overview in $page, $dir/overview.png"
fi
for json in "${files[@]}"; do
  name=$(basename "$json" .json)
  "$py" "$GDN_ROOT/perf/render.py" "$json" "$dir/$name.md"
  if [ "$name" != bench_cuda ]; then  # bench_cuda.json's short tables: the overview
    "$py" "$GDN_ROOT/perf/render.py" --summary "$json" "$page"
  fi
  log "$json -> $dir/$name.md$([ "$name" != bench_cuda ] && echo ", tables in $page")"
done
if [ -f "$dir/bench_openmp.json" ]; then
  "$py" "$GDN_ROOT/perf/plot.py" "$dir/bench_openmp.json" "$dir" >/dev/null
  log "$dir/bench_openmp.json -> $dir/openmp_time_vs_{T,B}.png"
fi
