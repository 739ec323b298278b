#!/usr/bin/env bash
# ctest `package_deb_install` (cmake/packaging.cmake): builds the .deb from the build tree with
# CPack, installs it with dpkg into a scratch root (the host's packages are not touched), and
# from an empty directory runs it as kubectl runs plugins: `kubectl plugin list` must list
# kubectl-gpufit, `kubectl gpufit --version` must print the project's version, a real command
# must work from the installed files alone, and `man -l` must render the page.
# Usage: deb_install_test.sh CPACK CPackConfig.cmake VERSION
set -euo pipefail
cpack=$1 config=$2 version=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in dpkg dpkg-deb dpkg-shlibdeps kubectl man; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/bootstrap --tests installs it)"
done
[ "$(id -u)" -eq 0 ] || command -v fakeroot >/dev/null || fail "fakeroot not found (scripts/bootstrap --tests)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The package, as `make package` makes it (but into the scratch directory).
"$cpack" --config "$config" -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail "cpack"; }
debs=("$tmp"/out/gpufit_"$version"_*.deb)
[ -f "${debs[0]}" ] || { cat "$tmp/cpack.log"; fail "no gpufit_${version}_*.deb"; }
deb=${debs[0]}
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes"
field() { dpkg-deb -f "$deb" "$1"; }
for f in Package Version Architecture Section Maintainer Installed-Size Depends Recommends; do
  echo "  $f: $(field "$f")"
done
[ "$(field Package)" = gpufit ] || fail "Package is '$(field Package)'"
[ "$(field Version)" = "$version" ] || fail "Version is '$(field Version)', want $version"
[ "$(field Recommends)" = "kubernetes-client | kubectl" ] || fail "Recommends is '$(field Recommends)'"
# Depends comes from dpkg-shlibdeps: the Debian packages of the libraries the binary links
# (OpenSSL comes through libcpp-httplib).
depends=$(field Depends)
for lib in libc6 libstdc++6 libgcc-s1 libyaml-cpp libfmt coinor-libcbc libcpp-httplib libspdlog libsimdjson; do
  [[ ", $depends" == *", $lib"* ]] || fail "Depends lacks $lib: $depends"
done
# Each one names a real package, installed or provided (libspdlog1.10-fmt9) here: the ones this
# host runs the binary with.
installed=$(dpkg-query -W -f='${db:Status-Abbrev}|${Package}, ${Provides}\n' | sed -n 's/^ii *|//p' \
            | tr ',' '\n' | sed -E 's/^ *([^ ]+).*/\1/' | sort -u)
IFS=',' read -ra deps <<<"$depends"
for d in "${deps[@]}"; do
  name=$(sed -E 's/^ *([^ (|]+).*/\1/' <<<"$d")
  grep -qx "$name" <<<"$installed" || fail "Depends names $name, neither installed nor provided here"
done

# 2. dpkg -i into a scratch root with its own, empty package database. The libraries are the
# host's (the binary runs with them), so their packages are missing there: --force-depends.
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(fakeroot)
"${as_root[@]}" dpkg --root="$root" --log="$tmp/dpkg.log" --force-depends --path-include='*' -i "$deb" \
  >"$tmp/dpkg.out" 2>&1 || { cat "$tmp/dpkg.out"; fail "dpkg -i"; }
dpkg --root="$root" -s gpufit | grep -qx "Status: install ok installed" || fail "dpkg -s: not installed"
echo "installed files:"
dpkg --root="$root" -L gpufit | grep -E '/(bin/|man1/|share/gpufit/|examples/[^/]*$)' | sed 's/^/  /'
for f in usr/bin/gpufit usr/share/man/man1/gpufit.1.gz usr/share/gpufit/gpu_catalog.yaml \
         usr/share/gpufit/mig_profiles.yaml usr/share/doc/gpufit/README.md \
         usr/share/doc/gpufit/examples/training-jobs.yaml usr/share/doc/gpufit/docs/internals/architecture.md; do
  [ -f "$root/$f" ] || fail "not installed: /$f"
done
[ "$(readlink "$root/usr/bin/kubectl-gpufit")" = gpufit ] || fail "/usr/bin/kubectl-gpufit is not a link to gpufit"
[ -x "$root/usr/bin/gpufit" ] || fail "/usr/bin/gpufit is not executable"
! ldd "$root/usr/bin/gpufit" | grep "not found" || fail "unresolved libraries"

# 3. As a user would run it: an empty directory, the package's bin first on PATH, nothing else.
mkdir "$tmp/home" "$tmp/work"
cd "$tmp/work"
run() { env -i HOME="$tmp/home" PATH="$root/usr/bin:/usr/bin:/bin" "$@"; }
plugins=$(run kubectl plugin list 2>&1) || { echo "$plugins"; fail "kubectl plugin list"; }
echo "kubectl plugin list:"; sed 's/^/  /' <<<"$plugins"
grep -qx "$root/usr/bin/kubectl-gpufit" <<<"$plugins" || fail "kubectl plugin list does not list kubectl-gpufit"
! grep -qi "warning" <<<"$plugins" || fail "kubectl plugin list warns"
got=$(run kubectl gpufit --version 2>&1) || { echo "$got"; fail "kubectl gpufit --version"; }
echo "kubectl gpufit --version: $got"
[[ "$got" =~ ^gpufit\ ${version//./\\.}\ \(git\ ([0-9a-f]{4,}|unknown)\)$ ]] \
  || fail "kubectl gpufit --version printed '$got', want 'gpufit $version (git <commit>)'"
# The catalog and MIG profiles are embedded: a real command needs no file from the build tree.
mig=$(run kubectl gpufit mig check --gpu h100-80gb --profiles 3g.40gb,2g.20gb 2>&1) \
  || { echo "$mig"; fail "kubectl gpufit mig check"; }
grep -qi "h100-80gb" <<<"$mig" || { echo "$mig"; fail "mig check does not name the GPU"; }
echo "kubectl gpufit mig check: $(wc -l <<<"$mig") lines"
[ -z "$(ls -A)" ] || fail "the plugin left files in the working directory: $(ls -A)"

# 4. The man page renders and documents the commands.
page=$(env -i PATH=/usr/bin:/bin MANWIDTH=100 man -P cat -l "$root/usr/share/man/man1/gpufit.1.gz" 2>&1) \
  || { echo "$page"; fail "man -l"; }
echo "man -l gpufit.1.gz: $(wc -l <<<"$page") lines"
grep -q "^NAME" <<<"$page" || fail "man page has no NAME"
grep -q "gpufit - right-size and co-locate GPU workloads" <<<"$page" || fail "man page NAME line"
grep -q "^COMMANDS" <<<"$page" || fail "man page has no COMMANDS"
for cmd in analyze plan backtest replay simulate mig "mig check" training "training study" inference demo completion; do
  grep -qx "   gpufit $cmd" <<<"$page" || fail "man page has no section for gpufit $cmd"
done
plan_section=$(sed -n '/^   gpufit plan$/,/^   gpufit [a-z]/p' <<<"$page")
for flag in --telemetry --prometheus --gpu --report --emit-manifests; do
  grep -qE "^ +$flag " <<<"$plan_section" || fail "man page: gpufit plan does not document $flag"
done
grep -q "kubectl-gpufit" <<<"$page" || fail "man page does not mention kubectl-gpufit"
grep -q "$version" <<<"$page" || fail "man page does not carry version $version"
echo "PASS"
