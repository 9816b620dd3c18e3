#!/usr/bin/env bash
# The build scripts must fail loudly (scripts/lib.sh): a failed step inside
# `$(...)` fails the assignment that runs it, and so the calling script.
# Once, the Kokkos bootstrap failed inside `kokkos=$(kokkos_prefix ...)`, the
# build failed inside `dir=$(configure_and_build ...)`, and the test command
# went on and exited 0 without running a test.
#   failures_propagate.sh REPO_ROOT
set -u
root=$1
fails=0
# check DESCRIPTION SNIPPET [MESSAGE]: SNIPPET, run after sourcing lib.sh, must
# exit non-zero before "reached" (and print MESSAGE, when given).
check() {
  local what=$1 snippet=$2 message=${3:-} out rc
  # Without the caller's Kokkos_ROOT / CMAKE_PREFIX_PATH: CMake's find_package
  # also reads them from the environment, and would find a Kokkos after all.
  out=$(env -u Kokkos_ROOT -u CMAKE_PREFIX_PATH bash -c "source '$root/scripts/lib.sh'; $snippet; echo reached" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] || [[ $out == *reached* ]]; then
    echo "FAIL: $what (exit $rc; the script went on)"
    fails=$((fails + 1))
  elif [ -n "$message" ] && [[ $out != *"$message"* ]]; then
    echo "FAIL: $what (exit $rc, but no \"$message\" in its output:)"
    printf '%s\n' "$out" | tail -5
    fails=$((fails + 1))
  else
    echo "ok: $what (exit $rc)"
  fi
}
name=fail-check-$$
check "a failing command inside \$(...)" 'x=$(false; echo value)'
check "configure_and_build with no Kokkos at the prefix" \
  "dir=\$(configure_and_build $name /nonexistent/kokkos-prefix)" "cmake configure failed: build/$name"
rm -rf "$root/build/$name"
[ $fails -eq 0 ]
