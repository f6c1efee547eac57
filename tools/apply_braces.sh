#!/usr/bin/env bash
# Braces every if/else/for/while/do body in the tree, reproducibly: clang-format 14 has no
# InsertBraces, so clang-tidy's readability-braces-around-statements adds them, clang-format
# then lays them out, and tests/check_braces.py (which CI runs) proves none is left. Only
# the translation units that check_braces.py flags (or that include a flagged header) are
# run through clang-tidy, so a re-run after a merge takes seconds, not a full parse of the
# tree. Re-run it after merging branches that add unbraced bodies.
#
# Usage: tools/apply_braces.sh [BUILD_DIR]   (default build; configured here when it has no
#        compile_commands.json)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build}
if [ ! -f "$build/compile_commands.json" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi
build=$(cd "$build" && pwd)

# check_braces.py exits 1 when it finds something: that is the input here, not a failure.
flagged=$({ /usr/bin/python3 tests/check_braces.py || true; } | sed -n 's/^\([^:]*\):[0-9]*: .*/\1/p' | sort -u)
if [ -z "$flagged" ]; then
  echo "braces: nothing to do"
  exit 0
fi
units=()
for f in $flagged; do
  case $f in
  *.cpp) units+=("$root/$f") ;;
  *)
    # A header: the units that include it (by its root-relative name), else every unit.
    users=$(grep -rlF --include='*.cpp' "#include \"$f\"" engine compat migrate cli tests || true)
    if [ -z "$users" ]; then
      units=(all)
      break
    fi
    for u in $users; do units+=("$root/$u"); done
    ;;
  esac
done
if [ "${units[0]}" = all ]; then
  files_regex="^$root/(engine|compat|migrate|cli|tests)/"
else
  files_regex="^($(printf '%s\n' "${units[@]}" | sort -u | paste -sd'|'))\$"
fi
# Headers are reached through the floors' links in the build tree (ProjectSettings.cmake).
headers_regex="^($root|$build/floors/[a-z]+)/(engine|compat|migrate|cli|tests)/"
# -Wno-everything: clang's own warnings (the flags are gcc's, with -Werror) must not keep
# the fixes from being applied. Its exit status is not the verdict: check_braces.py is.
run-clang-tidy -p "$build" -quiet -fix -j "$(nproc)" \
  -checks='-*,readability-braces-around-statements' \
  -header-filter="$headers_regex" -extra-arg=-Wno-everything \
  "$files_regex" >"$build/apply_braces.log" 2>&1 || true
git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
/usr/bin/python3 tests/check_braces.py
