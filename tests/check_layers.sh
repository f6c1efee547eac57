#!/usr/bin/env bash
# Fails when an #include crosses the layering cli -> migrate -> compat -> engine: engine
# (and its tests and fuzz targets) includes nothing of compat, migrate or cli, nor CLI11 or
# toml++; compat includes nothing of migrate or cli, nor CLI11; migrate includes nothing of
# cli, nor CLI11. A quoted include that climbs with ../ is refused everywhere, since it
# would step around these rules. Prints one line per violation: FILE:LINE: why.
#
# Usage: tests/check_layers.sh [ROOT]   (default: the repository holding this script)
set -uo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root" || exit 2

# Each layer's forbidden include prefixes (quoted "x/ or angled <x/).
forbidden_for() {
  case $1 in
  engine) echo '"compat/ "migrate/ "cli/ <CLI/ <toml++/ <toml.hpp' ;;
  compat) echo '"migrate/ "cli/ <CLI/' ;;
  migrate) echo '"cli/ <CLI/' ;;
  *) echo '' ;;
  esac
}

# The layer a file belongs to: its top folder, or the folder under tests/unit/; a fuzz
# target, the floor of what it fuzzes.
layer_of() {
  case $1 in
  tests/fuzz/fuzz_monitor_log.cpp | tests/fuzz/fuzz_capture_file.cpp | tests/fuzz/fuzz_jsonl.cpp)
    echo compat
    ;;
  tests/fuzz/fuzz_toml.cpp) echo migrate ;;
  engine/* | tests/unit/engine/* | tests/fuzz/*) echo engine ;;
  compat/* | tests/unit/compat/*) echo compat ;;
  migrate/* | tests/unit/migrate/*) echo migrate ;;
  cli/*) echo cli ;;
  *) echo other ;;
  esac
}

bad=0
while IFS= read -r -d '' file; do
  file=${file#./}
  layer=$(layer_of "$file")
  forbidden=$(forbidden_for "$layer")
  lineno=0
  while IFS= read -r line; do
    lineno=$((lineno + 1))
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\"\<][^\"\>]*) ]] || continue
    target=${BASH_REMATCH[1]}
    if [[ $target == \"*../* ]]; then
      echo "$file:$lineno: include ${target#?} climbs with ../; name it from the root"
      bad=1
      continue
    fi
    for prefix in $forbidden; do
      if [[ $target == "$prefix"* ]]; then
        echo "$file:$lineno: $layer may not include ${target#?} (edges go down only: cli -> migrate -> compat -> engine; engine never sees CLI11 or toml++)"
        bad=1
      fi
    done
  done <"$file"
done < <(find engine compat migrate cli tests -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.inc' \) -print0 2>/dev/null)
if [ "$bad" -eq 0 ]; then
  echo "layers: no include crosses cli -> migrate -> compat -> engine"
fi
exit $bad
