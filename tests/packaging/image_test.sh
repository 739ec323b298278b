#!/usr/bin/env bash
# ctest `package_image` (tests/packaging/CMakeLists.txt): builds the OCI image from the freshly
# built binary (packaging/image/build-image.sh), unpacks it with umoci as a runtime would, and runs
# `gpufit --version` from the unpacked root filesystem alone under chroot, as root and as the
# image's user 65532 (under `unshare -r` when not root). Checks the image's configuration
# (entry point, user), its names in index.json (docker load, ctr import), runs the demo's plan
# from it (the same bytes as the binary's) and prints its size.
# Usage: image_test.sh BUILD_IMAGE_SCRIPT GPUFIT_BINARY VERSION
set -euo pipefail
script=$1 binary=$2 version=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in umoci chroot python3; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/bootstrap --tests installs it)"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$script" "$binary" "$version" "$tmp/out" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build-image.sh"; }
layout="$tmp/out/gpufit-$version.oci" archive="$tmp/out/gpufit-$version.oci.tar"
[ -s "$archive" ] || fail "no $archive"

# 1. The archive holds the layout at its top, as docker load and ctr import read it.
entries=$(tar -tf "$archive" | sort)
for e in oci-layout index.json; do grep -qx "$e" <<< "$entries" || fail "the archive lacks $e: $entries"; done
grep -q '^blobs/sha256/' <<< "$entries" || fail "the archive has no blobs/sha256/"

# 2. index.json, the manifest and the config, read independently of umoci.
python3 - "$layout" "$version" <<'PY'
import hashlib, json, os, sys
layout, version = sys.argv[1:]
def blob(desc):
    algo, hexd = desc["digest"].split(":")
    data = open(os.path.join(layout, "blobs", algo, hexd), "rb").read()
    assert hashlib.sha256(data).hexdigest() == hexd, f"blob {desc['digest']} does not match its digest"
    assert len(data) == desc["size"], f"blob {desc['digest']} has {len(data)} bytes, descriptor says {desc['size']}"
    return data
index = json.load(open(os.path.join(layout, "index.json")))
assert json.load(open(os.path.join(layout, "oci-layout")))["imageLayoutVersion"] == "1.0.0"
assert len(index["manifests"]) == 1, index
desc = index["manifests"][0]
ann = desc["annotations"]
assert ann["org.opencontainers.image.ref.name"] == version, ann
assert ann["io.containerd.image.name"] == f"docker.io/library/gpufit:{version}", ann
manifest = json.loads(blob(desc))
config = json.loads(blob(manifest["config"]))
assert len(manifest["layers"]) == 1, manifest["layers"]
for layer in manifest["layers"]:
    blob(layer)
c = config["config"]
assert c["Entrypoint"] == ["/usr/bin/gpufit"], c
assert c["User"] == "65532:65532", c
assert config["os"] == "linux", config
assert c["Labels"]["org.opencontainers.image.version"] == version, c
print(f"config: entrypoint {c['Entrypoint']}, user {c['User']}, {config['architecture']}, "
      f"layer {manifest['layers'][0]['size']} bytes compressed")
PY

# 3. Unpacked as a runtime unpacks it, and run from its files alone.
rootless=()
[ "$(id -u)" -eq 0 ] || rootless=(--rootless)
umoci unpack "${rootless[@]}" --image "$layout:$version" "$tmp/bundle" > /dev/null
rootfs="$tmp/bundle/rootfs"
grep -qx 'gpufit:x:65532:65532:gpufit:/tmp:/sbin/nologin' "$rootfs/etc/passwd" || fail "/etc/passwd lacks user 65532"
[ -s "$rootfs/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA bundle"
[ "$(stat -c %a "$rootfs/tmp")" = 1777 ] || fail "/tmp is $(stat -c %a "$rootfs/tmp"), want 1777"
want=$("$binary" --version)
if [ "$(id -u)" -eq 0 ]; then
  got=$(chroot "$rootfs" /usr/bin/gpufit --version) || fail "gpufit --version failed in the image"
  got_user=$(chroot --userspec=65532:65532 "$rootfs" /usr/bin/gpufit --version) || fail "gpufit --version as 65532 failed"
  [ "$got_user" = "$want" ] || fail "as user 65532 the image says '$got_user', the binary '$want'"
else
  command -v unshare >/dev/null || fail "not root and no unshare (util-linux)"
  unshare -r true 2>/dev/null || fail "not root, and unshare -r is refused (user namespaces are off here): run the test as root"
  got=$(unshare -r chroot "$rootfs" /usr/bin/gpufit --version) || fail "gpufit --version failed in the image (unshare -r chroot)"
fi
[ "$got" = "$want" ] || fail "the image says '$got', the binary '$want'"
echo "image runs: $got"
# A real job from the image's files alone, as its user: the demo's plan (the embedded synthetic
# cluster), the same bytes as the binary's own.
demo=(demo --search-budget 0 -f json)
"$binary" "${demo[@]}" > "$tmp/demo-host.json" || fail "gpufit ${demo[*]} failed outside the image"
if [ "$(id -u)" -eq 0 ]; then
  chroot --userspec=65532:65532 "$rootfs" /usr/bin/gpufit "${demo[@]}" > "$tmp/demo-image.json" || fail "gpufit ${demo[*]} failed in the image"
else
  unshare -r chroot "$rootfs" /usr/bin/gpufit "${demo[@]}" > "$tmp/demo-image.json" || fail "gpufit ${demo[*]} failed in the image"
fi
cmp "$tmp/demo-host.json" "$tmp/demo-image.json" || fail "the image's demo plan differs from the binary's"
echo "image runs gpufit ${demo[*]}: $(stat -c %s "$tmp/demo-image.json") bytes, the same as the binary's"
echo "image size: archive $(stat -c %s "$archive") bytes; root filesystem $(du -sb "$rootfs" | cut -f1) bytes"
