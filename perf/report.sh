#!/usr/bin/env bash
# Regenerate everything docs/performance.md shows from the benchmark JSON files:
#   bash perf/report.sh [DIR [PAGE]]
# DIR defaults to docs/perf, PAGE to docs/performance.md. For every
# DIR/bench_NAME.json (bench_cuda.json from scripts/gpu_run.sh --bench,
# bench_openmp.json from perf/run.sh):
#   DIR/bench_NAME.md          every case (perf/render.py)
#   PAGE                       the short tables between the markers of
#                              bench_NAME.json (perf/render.py --summary)
#   DIR/NAME_time_vs_T.png     the plots (perf/plot.py)
#   DIR/NAME_time_vs_B.png
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
for json in "${files[@]}"; do
  name=$(basename "$json" .json)
  "$py" "$GDN_ROOT/perf/render.py" "$json" "$dir/$name.md"
  "$py" "$GDN_ROOT/perf/render.py" --summary "$json" "$page"
  "$py" "$GDN_ROOT/perf/plot.py" "$json" "$dir" >/dev/null
  log "$json -> $dir/$name.md, $dir/${name#bench_}_time_vs_{T,B}.png, tables in $page"
done
