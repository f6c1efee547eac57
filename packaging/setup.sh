#!/usr/bin/env bash
# Set up keyshift on a Debian 12 machine (as root) from a clone of this repository.
#
#   packaging/setup.sh          install what is missing, build, run `keyshift serve` on
#                               127.0.0.1:6379 in the foreground (the embedded default)
#   packaging/setup.sh --test   install what is missing, build, run every test
#
# Only Debian packages are used; nothing is downloaded from anywhere else.
set -euo pipefail

mode=run
case "${1:-}" in
  --test) mode=test ;;
  "") ;;
  -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
  *) echo "setup.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

build_deps=(g++ cmake ninja-build pkg-config libcli11-dev libfmt-dev libtomlplusplus-dev
            doctest-dev libmimalloc-dev liblua5.1-0-dev lua-cjson-dev libssl-dev libpcap-dev)
# chromium renders the HTML report of `keyshift bench compare` in a test (headless); ruby
# checks rewritten Rails files (ruby -c); python3-junitparser reads verify clients' JUnit XML;
# tcpdump records the packets capture --from-pcap reads (as root); dpkg-dev and lintian build
# and check the Debian package (packaging/build-deb.sh, test_package.py).
test_deps=(redis-server redis-tools python3 python3-redis clang-format procps clang
           libclang-rt-14-dev nginx php-cli ansible chromium ruby python3-junitparser openssl
           tcpdump dpkg-dev lintian)

want=("${build_deps[@]}")
[ "$mode" = test ] && want+=("${test_deps[@]}")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # Debian's redis-server package must not start a service on 6379 behind our back.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  rm -f /usr/sbin/policy-rc.d
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEYSHIFT_WARNINGS_AS_ERRORS=ON
cmake --build build -j"$jobs"

if [ "$mode" = run ]; then
  echo "setup: starting keyshift serve on 127.0.0.1:6379 (Ctrl-C to stop)"
  exec build/keyshift serve --bind 127.0.0.1 --port 6379
fi
exec bash tests/run_all.sh
