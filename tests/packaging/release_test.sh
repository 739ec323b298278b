#!/usr/bin/env bash
# ctest `package_release` (tests/packaging/CMakeLists.txt): `make release`'s files
# (packaging/release.sh) from the freshly built binary. The checksums verify; the sha256 and uri
# the krew manifest names are the tarball's own, computed here; the tarball holds exactly
# gpufit, kubectl-gpufit (the same bytes), README.md (and LICENSE when the checkout has one);
# kubectl-gpufit run from the unpacked tarball prints the binary's --version; a second run gives
# the same bytes. The manifest's fields are checked against krew's plugin format (v1alpha2), and
# by krew's own validator when KREW_VALIDATOR names it (scripts/krew-validator-build).
# Usage: release_test.sh RELEASE_SCRIPT GPUFIT_BINARY VERSION [KREW_VALIDATOR]
set -euo pipefail
script=$1 binary=$2 version=$3 validator=${4:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in sha256sum tar python3; do command -v "$tool" >/dev/null || fail "$tool not found"; done
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml not found (scripts/bootstrap --tests installs it)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
top=$(cd "$(dirname "$script")/.." && pwd)
arch=$(dpkg --print-architecture)
name="gpufit-$version-linux-$arch"

GPUFIT_RELEASE_URL=https://downloads.example/gpufit/v$version bash "$script" "$binary" "$version" "$tmp/out" \
  > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "release.sh"; }
cat "$tmp/log"
(cd "$tmp/out" && sha256sum -c --strict SHA256SUMS) || fail "SHA256SUMS does not verify"
[ "$(wc -l < "$tmp/out/SHA256SUMS")" -eq 2 ] || fail "SHA256SUMS should list the tarball and the manifest: $(cat "$tmp/out/SHA256SUMS")"

# The tarball's entries, exactly.
want="$name/
$name/README.md
$name/gpufit
$name/kubectl-gpufit"
[ -f "$top/LICENSE" ] && want=$(printf '%s\n%s' "$want" "$name/LICENSE" | sort)
got=$(tar -tzf "$tmp/out/$name.tar.gz" | sort)
[ "$got" = "$(sort <<< "$want")" ] || fail "the tarball holds:
$got
want:
$want"
mkdir "$tmp/unpacked"
tar -xzf "$tmp/out/$name.tar.gz" -C "$tmp/unpacked"
cmp "$tmp/unpacked/$name/gpufit" "$tmp/unpacked/$name/kubectl-gpufit" || fail "kubectl-gpufit is not the same binary as gpufit"
cmp "$top/README.md" "$tmp/unpacked/$name/README.md" || fail "README.md differs from the checkout's"
# Under the plugin's name the binary may name itself differently; the version it prints is the
# project's, the same as the built binary's.
want_version=$("$binary" --version)
[[ "$want_version" == *" $version"* ]] || fail "the binary's --version '$want_version' does not name $version"
got_version=$(cd "$tmp" && "$tmp/unpacked/$name/kubectl-gpufit" --version) || fail "kubectl-gpufit --version failed"
[[ "$got_version" == *" $version"* ]] || fail "kubectl-gpufit --version says '$got_version', want version $version"
echo "tarball runs: $got_version"

# The manifest, read as krew reads it (krew.sigs.k8s.io/docs/developer-guide/plugin-manifest).
python3 - "$tmp/out/gpufit.yaml" "$tmp/out/$name.tar.gz" "$version" "$arch" <<'PY'
import hashlib, re, sys, tarfile, yaml
path, tarball, version, arch = sys.argv[1:]
m = yaml.safe_load(open(path))
assert m["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2", m["apiVersion"]
assert m["kind"] == "Plugin", m["kind"]
assert m["metadata"]["name"] == "gpufit" and path.endswith("/gpufit.yaml"), "the name must match the file name"
spec = m["spec"]
assert spec["version"] == f"v{version}", spec["version"]
assert re.fullmatch(r"v\d+\.\d+\.\d+", spec["version"]), "krew wants a semantic version with a v"
assert spec["shortDescription"] and len(spec["shortDescription"]) <= 50, "shortDescription: at most 50 characters"
assert spec["description"].strip() and spec["homepage"].startswith("https://")
assert len(spec["platforms"]) == 1, spec["platforms"]
p = spec["platforms"][0]
assert p["selector"] == {"matchLabels": {"os": "linux", "arch": arch}}, p["selector"]
sha = hashlib.sha256(open(tarball, "rb").read()).hexdigest()
assert p["sha256"] == sha, f"manifest sha256 {p['sha256']}, tarball {sha}"
name = tarball.rsplit("/", 1)[1]
assert p["uri"] == f"https://downloads.example/gpufit/v{version}/{name}", p["uri"]
assert p["bin"] == "kubectl-gpufit", p["bin"]
members = set(tarfile.open(tarball).getnames())
for f in p["files"]:
    assert f["from"] in members, f"files: {f['from']} is not in the tarball"
    assert f["to"] == "."
assert any(f["from"].endswith("/" + p["bin"]) for f in p["files"]), "bin is not among the installed files"
print(f"krew manifest: {spec['version']}, linux/{arch}, sha256 {sha[:12]}..., bin {p['bin']}")
PY
if [ -n "$validator" ]; then
  "$validator" -manifest "$tmp/out/gpufit.yaml" -skip-install || fail "krew's validate-krew-manifest refused the manifest"
  echo "krew's validate-krew-manifest accepts it"
fi

# Reproducible: a second run makes the same bytes.
GPUFIT_RELEASE_URL=https://downloads.example/gpufit/v$version bash "$script" "$binary" "$version" "$tmp/again" > /dev/null 2>&1
cmp "$tmp/out/SHA256SUMS" "$tmp/again/SHA256SUMS" || fail "a second release run made different files"
echo "release size: $(stat -c %s "$tmp/out/$name.tar.gz") bytes"
