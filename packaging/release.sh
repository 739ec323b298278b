#!/usr/bin/env bash
# `make release`: the release files of one platform, from a built binary.
#
#   OUT/gpufit-VERSION-linux-ARCH.tar.gz   gpufit-VERSION-linux-ARCH/{gpufit, kubectl-gpufit,
#                                          README.md, LICENSE when the checkout has one};
#                                          kubectl-gpufit is the same binary under the name kubectl
#                                          runs as `kubectl gpufit`
#   OUT/gpufit.yaml                        the krew manifest (packaging/krew/gpufit.yaml) with the
#                                          tarball's URI and sha256
#   OUT/SHA256SUMS                         sha256sum of both (check: cd OUT && sha256sum -c SHA256SUMS)
#
# ARCH is Debian's name of this machine's architecture (amd64, arm64), which krew's selector
# uses too. The tarball is reproducible: sorted, owned by root, every mtime the commit's time
# (SOURCE_DATE_EPOCH when set). GPUFIT_RELEASE_URL is where the tarball will be published (the
# manifest's uri is GPUFIT_RELEASE_URL/<tarball>); GPUFIT_HOMEPAGE is the manifest's homepage.
# Usage: release.sh GPUFIT_BINARY VERSION OUT_DIR
set -euo pipefail
die() { echo "release: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: release.sh GPUFIT_BINARY VERSION OUT_DIR"
binary=$1 version=$2 out=$3
top=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$binary" ] || die "$binary is not an executable (build it: cmake --build build --target gpufit)"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "version '$version' is not MAJOR.MINOR.PATCH"
arch=$(dpkg --print-architecture 2>/dev/null) || case "$(uname -m)" in
  x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) die "unknown architecture $(uname -m)" ;;
esac
homepage=${GPUFIT_HOMEPAGE:-https://github.com/gpufit/gpufit}
base_url=${GPUFIT_RELEASE_URL:-$homepage/releases/download/v$version}
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || echo 0)}

name="gpufit-$version-linux-$arch"
tarball="$name.tar.gz"
mkdir -p "$out"
work=$(mktemp -d "$out/.release.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/$name"
install -m 0755 "$binary" "$work/$name/gpufit"
strip --strip-unneeded "$work/$name/gpufit" 2>/dev/null || true
cp "$work/$name/gpufit" "$work/$name/kubectl-gpufit"
install -m 0644 "$top/README.md" "$work/$name/README.md"
if [ -f "$top/LICENSE" ]; then install -m 0644 "$top/LICENSE" "$work/$name/LICENSE"; fi
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$work" -cf - "$name" \
  | gzip -9n > "$work/$tarball"
sha=$(sha256sum "$work/$tarball" | cut -d' ' -f1)
sed -e "s|@VERSION@|$version|g" -e "s|@ARCH@|$arch|g" -e "s|@URI@|$base_url/$tarball|g" \
    -e "s|@SHA256@|$sha|g" -e "s|@HOMEPAGE@|$homepage|g" "$top/packaging/krew/gpufit.yaml" \
  | sed -e '/^# /d' > "$work/gpufit.yaml"
if grep -q '@[A-Z0-9]*@' "$work/gpufit.yaml"; then die "placeholders left in the krew manifest: $(grep '@[A-Z0-9]*@' "$work/gpufit.yaml")"; fi
(cd "$work" && sha256sum "$tarball" gpufit.yaml > SHA256SUMS)
mv -f "$work/$tarball" "$work/gpufit.yaml" "$work/SHA256SUMS" "$out/"
echo "release: $out/$tarball ($(stat -c %s "$out/$tarball") bytes, sha256 $sha), $out/gpufit.yaml, $out/SHA256SUMS"
