# Shared by scripts/*.sh: packages, the Kokkos bootstrap, and the CMake build.
# Sourced, not run. Everything lands under the repository: Kokkos in
# .deps/kokkos/<variant>, builds in build/<name>; a second run reuses both.
set -euo pipefail
# A failure inside $(...) fails the substitution too (bash clears -e there
# otherwise); the functions below also return non-zero explicitly, since -e
# is ignored altogether where the caller tests their status (f || g).
shopt -s inherit_errexit

GDN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GDN_DEPS=${GDN_DEPS:-$GDN_ROOT/.deps}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

log() { printf '[gdn] %s\n' "$*" >&2; }

# Debian packages the build needs, plus any given as arguments; installed only
# when missing (needs root then).
ensure_packages() {
  ensure_debian_packages cmake g++ make libgtest-dev libbenchmark-dev ca-certificates perl python3 "$@"
}

# The Debian packages named as arguments, installed only when missing.
ensure_debian_packages() {
  local missing=() p
  for p in "$@"; do
    case $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) in
      *"ok installed") ;;
      *) missing+=("$p") ;;
    esac
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    [ "$(id -u)" = 0 ] || { log "need root to apt-get install ${missing[*]}"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  fi
}

# Kokkos: an existing install named by Kokkos_ROOT (or found on
# CMAKE_PREFIX_PATH) wins; otherwise the
# project's bootstrap (Kokkos 3.4.01 from Debian's trilinos source).
# Prints the Kokkos prefix. $1 = openmp | cuda
kokkos_prefix() {
  local variant=$1 p
  if [ -n "${Kokkos_ROOT:-}" ]; then
    echo "$Kokkos_ROOT"
    return
  fi
  # A Kokkos on CMAKE_PREFIX_PATH wins over the bootstrap too.
  local cpp=${CMAKE_PREFIX_PATH:-}
  for p in ${cpp//:/ }; do
    if ls "$p"/lib*/cmake/Kokkos/KokkosConfig.cmake >/dev/null 2>&1; then
      echo "$p"
      return
    fi
  done
  local args=(--prefix "$GDN_DEPS/kokkos" --cache "$GDN_DEPS/cache" --jobs "$JOBS")
  if [ "$variant" = cuda ]; then args+=(--cuda --no-openmp); fi
  if [ -f "$GDN_DEPS/kokkos-3.4.01-patched.tar.gz" ] && [ ! -d "$GDN_DEPS/cache" ]; then
    args+=(--sources "$GDN_DEPS/kokkos-3.4.01-patched.tar.gz")  # offline (the GPU machine)
  fi
  bash "$GDN_ROOT/cmake/kokkos-bootstrap.sh" "${args[@]}" >&2 ||
    { log "the Kokkos bootstrap failed (cmake/kokkos-bootstrap.sh, exit $?)"; return 1; }
  p=$GDN_DEPS/kokkos/$variant
  if ! ls "$p"/lib*/cmake/Kokkos/KokkosConfig.cmake >/dev/null 2>&1; then
    log "the Kokkos bootstrap left no KokkosConfig.cmake under $p"
    return 1
  fi
  echo "$p"
}

# Debian packages of the Python module and its tests (scripts/test.sh); the
# compile-only CUDA build needs the first two.
GDN_PYTHON_PACKAGES=(pybind11-dev python3-dev python3-torch python3-pytest)

# The Python interpreter for the module and its tests: GDN_PYTHON if set, else
# the first python3 (the one on PATH, then /usr/bin/python3) that imports
# torch, else /usr/bin/python3 (Debian's, where python3-torch installs).
gdn_python() {
  local p
  if [ -n "${GDN_PYTHON:-}" ]; then echo "$GDN_PYTHON"; return; fi
  for p in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$p" ] && "$p" -c 'import torch' >/dev/null 2>&1; then echo "$p"; return; fi
  done
  if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi
}

# CMake arguments that build the Python module with interpreter $1, one per
# line; a pip-installed pybind11 is found through its --cmakedir.
python_cmake_args() {
  local dir
  echo "-DGDN_ENABLE_PYTHON=ON"
  echo "-DPython3_EXECUTABLE=$1"
  echo "-DPython_EXECUTABLE=$1"  # for a pybind11 that runs find_package(Python) itself
  if dir=$("$1" -m pybind11 --cmakedir 2>/dev/null) && [ -n "$dir" ]; then
    echo "-Dpybind11_DIR=$dir"
  fi
}

# configure_and_build <build-name> <kokkos-prefix> [cmake args...]
# (GDN_BUILD_TARGETS: build only those targets; default: all)
configure_and_build() {
  local name=$1 kokkos=$2
  shift 2
  local dir=$GDN_ROOT/build/$name
  local extra=()
  # Every Kokkos install ships bin/nvcc_wrapper; use it only for a CUDA-enabled Kokkos.
  if [ -x "$kokkos/bin/nvcc_wrapper" ] &&
     grep -qs 'Kokkos_DEVICES.*CUDA' "$kokkos"/lib*/cmake/Kokkos/KokkosConfigCommon.cmake; then
    extra+=("-DCMAKE_CXX_COMPILER=$kokkos/bin/nvcc_wrapper")
  fi
  # compile_commands.json: tools/profiling/sass_lines.py recompiles the CUDA source with the
  # build's command.
  # The project's own builds compile the host kernels for this CPU (-march=native); a caller's
  # later -DGDN_ENABLE_NATIVE_ARCH=OFF builds the portable default instead.
  cmake -S "$GDN_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    "-DKokkos_ROOT=$kokkos" -DGDN_ENABLE_NATIVE_ARCH=ON "${extra[@]}" "$@" >&2 ||
    { log "cmake configure failed: build/$name"; return 1; }
  local targets=()
  # GDN_BUILD_TARGETS (space-separated): build only these targets (and what they need).
  for t in ${GDN_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$dir" -j "$JOBS" "${targets[@]}" >&2 || { log "build failed: build/$name"; return 1; }
  echo "$dir"
}
