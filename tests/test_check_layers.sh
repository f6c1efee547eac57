#!/usr/bin/env bash
# Proves tests/check_layers.sh catches what it promises: on throw-away trees it must pass a
# clean layering and fail, naming the file and line, on each kind of crossing include.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
check="$here/check_layers.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# tree NAME FILE LINE...: a tree whose clean base gets FILE with the given lines.
tree() {
  local dir="$work/$1" file=$2
  shift 2
  mkdir -p "$dir/engine/util" "$dir/compat/report" "$dir/migrate" "$dir/cli" "$dir/tests/unit/engine"
  printf '#include "engine/util/a.hpp"\n#include <string>\n' >"$dir/engine/util/a.cpp"
  printf '#include "engine/util/a.hpp"\n#include <fmt/format.h>\n' >"$dir/compat/report/r.cpp"
  printf '#include "compat/report/r.hpp"\n#include <toml++/toml.h>\n' >"$dir/migrate/m.cpp"
  printf '#include "migrate/m.hpp"\n#include <CLI/CLI.hpp>\n' >"$dir/cli/main.cpp"
  mkdir -p "$(dirname "$dir/$file")"
  printf '%s\n' "$@" >"$dir/$file"
  echo "$dir"
}

# expect NAME STATUS PATTERN TREE: runs the check on TREE, wants STATUS and PATTERN in its output.
expect() {
  local name=$1 want=$2 pattern=$3 dir=$4 out status
  out=$(bash "$check" "$dir" 2>&1)
  status=$?
  if [ "$status" -ne "$want" ] || ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAIL: $name: status $status (wanted $want), output:"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "ok: $name"
  fi
}

expect "a clean tree passes" 0 "no include crosses" \
  "$(tree clean engine/util/b.cpp '#include "engine/util/a.hpp"')"
expect "engine including compat fails" 1 "engine/x.cpp:2: engine may not include compat/report/r.hpp" \
  "$(tree e_compat engine/x.cpp '#include <string>' '#include "compat/report/r.hpp"')"
expect "engine including migrate fails" 1 "engine/x.hpp:1: engine may not include migrate/m.hpp" \
  "$(tree e_migrate engine/x.hpp '#include "migrate/m.hpp"')"
expect "engine including cli fails" 1 "engine may not include cli/user_error.hpp" \
  "$(tree e_cli engine/x.cpp '#  include "cli/user_error.hpp"')"
expect "engine including CLI11 fails" 1 "engine may not include CLI/CLI.hpp" \
  "$(tree e_cli11 engine/server/x.cpp '#include <CLI/CLI.hpp>')"
expect "engine including toml++ fails" 1 "engine may not include toml++/toml.h" \
  "$(tree e_toml engine/server/x.cpp '#include <toml++/toml.h>')"
expect "an engine unit test including migrate fails" 1 "tests/unit/engine/t.cpp:1: engine may not" \
  "$(tree t_engine tests/unit/engine/t.cpp '#include "migrate/m.hpp"')"
expect "compat including migrate fails" 1 "compat/c.cpp:1: compat may not include migrate/m.hpp" \
  "$(tree c_migrate compat/c.cpp '#include "migrate/m.hpp"')"
expect "compat including cli fails" 1 "compat may not include cli/subcommands.hpp" \
  "$(tree c_cli compat/bench/c.cpp '#include "cli/subcommands.hpp"')"
expect "migrate including cli fails" 1 "migrate/rewrite/x.cpp:1: migrate may not include cli/user_error.hpp" \
  "$(tree m_cli migrate/rewrite/x.cpp '#include "cli/user_error.hpp"')"
expect "migrate including CLI11 fails" 1 "migrate may not include CLI/CLI.hpp" \
  "$(tree m_cli11 migrate/x.cpp '#include <CLI/CLI.hpp>')"
expect "a climbing include fails" 1 "climbs with ../" \
  "$(tree climb engine/util/c.cpp '#include "../../compat/report/r.hpp"')"
expect "the repository itself passes" 0 "no include crosses" "$(cd "$here/.." && pwd)"

[ "$failures" -eq 0 ]
