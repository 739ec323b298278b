#!/usr/bin/env bash
# Builds gpufit's OCI image offline, from this machine's Debian packages and a built binary: a
# minimal root filesystem (the binary, the shared libraries `ldd` lists and the dynamic loader,
# /etc/passwd and /etc/group with the non-root user 65532, /etc/nsswitch.conf, /tmp, the CA
# bundle for HTTPS to Prometheus and the API server), packed by Debian's umoci into an OCI image
# layout tagged VERSION, and a tar of that layout:
#
#   OUT/gpufit-VERSION.oci/        the OCI image layout (index.json, blobs/, oci-layout)
#   OUT/gpufit-VERSION.oci.tar     the same, as one archive for `docker load -i` (Docker >= 25)
#                                  and `ctr -n k8s.io images import`
#
# index.json names the image twice: org.opencontainers.image.ref.name is the tag (VERSION, as the
# OCI image spec defines it; `umoci --image DIR:VERSION` and `skopeo oci:DIR:VERSION` read it)
# and io.containerd.image.name is the full name docker.io/library/gpufit:VERSION, which
# `ctr images import` and `docker load` name the image by (ctr uses ref.name only with
# --base-name). deploy/kubernetes and the Helm chart run it as gpufit:VERSION.
#
# Entry point /usr/bin/gpufit, user 65532:65532, working directory /tmp. Runs as root (or any
# user: umoci's --rootless mode is used when not root).
# Usage: build-image.sh GPUFIT_BINARY VERSION OUT_DIR
set -euo pipefail
die() { echo "build-image: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: build-image.sh GPUFIT_BINARY VERSION OUT_DIR"
binary=$1 version=$2 out=$3
[ -x "$binary" ] || die "$binary is not an executable (build it: cmake --build build --target gpufit)"
[[ "$version" =~ ^[0-9A-Za-z._-]+$ ]] || die "version '$version' is not a valid tag"
command -v umoci >/dev/null || die "umoci not found (apt-get install umoci; scripts/bootstrap --tests)"
command -v python3 >/dev/null || die "python3 not found"
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca_bundle" ] || die "$ca_bundle is missing (apt-get install ca-certificates)"

name="docker.io/library/gpufit:$version"
layout="$out/gpufit-$version.oci"
archive="$out/gpufit-$version.oci.tar"
rootless=()
[ "$(id -u)" -eq 0 ] || rootless=(--rootless)
mkdir -p "$out"
work=$(mktemp -d "$out/.image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The root filesystem.
rootfs="$work/rootfs"
mkdir -p "$rootfs/usr/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
install -m 0755 "$binary" "$rootfs/usr/bin/gpufit"
strip --strip-unneeded "$rootfs/usr/bin/gpufit" 2>/dev/null || true
# Every library ldd resolves (`libx.so.N => /path (0x...)`) and the loader (`/lib64/ld-... (0x...)`),
# each copied (symlinks followed) to the path the binary looks it up by.
libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ -n "$libs" ] || die "ldd lists no libraries for $binary (a static binary needs no image of this kind)"
if ldd "$binary" | grep -q "not found"; then die "ldd cannot resolve every library of $binary: $(ldd "$binary" | grep 'not found')"; fi
for lib in $libs; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
cat > "$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
gpufit:x:65532:65532:gpufit:/tmp:/sbin/nologin
PASSWD
cat > "$rootfs/etc/group" <<'GROUP'
root:x:0:
gpufit:x:65532:
GROUP
# glibc resolves host names through NSS; files and dns are built into Debian 12's libc.
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
cp -L "$ca_bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
chmod -R go-w,a+rX "$rootfs"
chmod 1777 "$rootfs/tmp"

# 2. The image: an empty one, unpacked, filled with the root filesystem and repacked as one layer.
rm -rf "$layout"
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci unpack "${rootless[@]}" --image "$layout:$version" "$work/bundle" >/dev/null
cp -a "$rootfs/." "$work/bundle/rootfs/"
umoci repack --history.created_by "packaging/image/build-image.sh" --image "$layout:$version" "$work/bundle"
umoci config --no-history --image "$layout:$version" \
  --config.entrypoint /usr/bin/gpufit --config.user 65532:65532 --config.workingdir /tmp \
  --config.env PATH=/usr/bin:/bin --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.label org.opencontainers.image.title=gpufit \
  --config.label org.opencontainers.image.version="$version" \
  --os linux --architecture "$(dpkg --print-architecture 2>/dev/null || echo amd64)"
umoci gc --layout "$layout"

# 3. The names container runtimes load the image by (see the top of this file).
python3 - "$layout/index.json" "$version" "$name" <<'PY'
import json, sys
path, tag, name = sys.argv[1:]
index = json.load(open(path))
manifests = [m for m in index["manifests"]
             if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
if len(manifests) != 1:
    sys.exit(f"build-image: index.json has {len(manifests)} manifests tagged {tag}, want 1")
manifests[0]["annotations"]["io.containerd.image.name"] = name
json.dump(index, open(path, "w"), separators=(",", ":"))
PY

# 4. The archive: the layout's files at its top, as docker load and ctr import read it.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$layout" -cf "$archive" oci-layout index.json blobs
echo "build-image: $name in $layout and $archive ($(stat -c %s "$archive") bytes; root filesystem $(du -sb "$rootfs" | cut -f1) bytes)"
