#!/usr/bin/env bash
# Build the Debian package of keyshift from this tree with dpkg-deb:
#
#   bash packaging/build-deb.sh [--binary PATH] [--out DIR]
#
# writes DIR/keyshift_<version>_<arch>.deb (DIR defaults to build/; the version is CMake's
# project version with Debian revision -1) and prints its path. The binary is build/keyshift
# (built with CMake when missing) or --binary PATH; it is stripped into the package, the man
# pages are compressed, and the rest comes from packaging/debian/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary="$root/build/keyshift"
out="$root/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "build-deb.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps objcopy gzip; do
  command -v "$tool" >/dev/null || { echo "build-deb.sh: $tool is missing (apt-get install dpkg-dev binutils)" >&2; exit 1; }
done

upstream=$(sed -n 's/^project(keyshift VERSION \([0-9][0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ -n "$upstream" ] || { echo "build-deb.sh: no 'project(keyshift VERSION x.y.z' in CMakeLists.txt" >&2; exit 1; }
version="$upstream-1"
arch=$(dpkg --print-architecture)
maintainer="keyshift maintainers <maintainers@users.noreply.a-seed-14352a09.example>"
# Dates and mtimes come from the last commit, so two builds of one tree give one package.
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}

if [ ! -x "$binary" ]; then
  if [ "$binary" != "$root/build/keyshift" ]; then
    echo "build-deb.sh: $binary is not an executable" >&2; exit 1
  fi
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$root/build" --target keyshift
fi
built_version=$("$binary" --version | awk '{print $NF}')
if [ "$built_version" != "$upstream" ]; then
  echo "build-deb.sh: $binary says version '$built_version', CMakeLists.txt says '$upstream'" >&2
  exit 1
fi

mkdir -p "$out"
stage=$(mktemp -d "$out/deb-stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
pkg="$stage/keyshift"
deb="$root/packaging/debian"
doc="$pkg/usr/share/doc/keyshift"
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/share/man/man1" \
  "$pkg/usr/share/man/man5" "$doc" "$pkg/etc/keyshift" "$pkg/etc/logrotate.d" \
  "$pkg/lib/systemd/system"

objcopy --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$binary" "$pkg/usr/bin/keyshift"
chmod 0755 "$pkg/usr/bin/keyshift"
for page in "$root"/man/*.[15]; do
  section=${page##*.}
  install -m 0644 "$page" "$pkg/usr/share/man/man$section/"
  gzip -9n "$pkg/usr/share/man/man$section/$(basename "$page")"
done
install -m 0644 "$deb/keyshift.conf" "$pkg/etc/keyshift/keyshift.conf"
install -m 0644 "$deb/keyshift.logrotate" "$pkg/etc/logrotate.d/keyshift"
install -m 0644 "$deb/keyshift.service" "$pkg/lib/systemd/system/keyshift.service"
install -m 0644 "$deb/copyright" "$doc/copyright"
install -d -m 0755 "$pkg/usr/share/lintian/overrides"
install -m 0644 "$deb/lintian-overrides" "$pkg/usr/share/lintian/overrides/keyshift"
changelog_date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s/@VERSION@/$version/" -e "s/@COMMIT@/$commit/" -e "s/@MAINTAINER@/$maintainer/" \
  -e "s/@DATE@/$changelog_date/" "$deb/changelog.in" | gzip -9n > "$doc/changelog.Debian.gz"
chmod 0644 "$doc/changelog.Debian.gz"
for script in postinst prerm postrm; do
  install -m 0755 "$deb/$script" "$pkg/DEBIAN/$script"
done
printf '/etc/keyshift/keyshift.conf\n/etc/logrotate.d/keyshift\n' > "$pkg/DEBIAN/conffiles"

# The shared libraries the binary needs, as Debian packages with minimum versions.
mkdir -p "$stage/debian"
printf 'Source: keyshift\n\nPackage: keyshift\nArchitecture: any\n' > "$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O -e keyshift/usr/bin/keyshift 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
rm -rf "$stage/debian"

# md5sums of everything but the conffiles (dpkg keeps theirs itself).
(cd "$pkg" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\n' | LC_ALL=C sort |
  xargs md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/md5sums" "$pkg/DEBIAN/conffiles"
size=$(du -k -s --apparent-size --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@MAINTAINER@/$maintainer/" \
  -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" "$deb/control.in" > "$pkg/DEBIAN/control"
chmod 0644 "$pkg/DEBIAN/control"
find "$pkg" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +

# The unit as shipped, its ExecStart pointed at the staged binary (systemd-analyze checks
# that the command exists); skipped where systemd-analyze is missing.
if command -v systemd-analyze >/dev/null; then
  sed "s#^ExecStart=/usr/bin/keyshift #ExecStart=$pkg/usr/bin/keyshift #" \
    "$deb/keyshift.service" > "$stage/keyshift.service"
  if ! systemd-analyze verify --man=no "$stage/keyshift.service"; then
    echo "build-deb.sh: systemd-analyze verify refused packaging/debian/keyshift.service" >&2
    exit 1
  fi
  rm -f "$stage/keyshift.service"
fi

target="$out/keyshift_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$target" >/dev/null
echo "$target"
