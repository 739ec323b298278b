#!/usr/bin/env bash
# README.md's first screen (40 lines) must show how to install gpufit and the one command that
# plans your own cluster, each inside a fenced code block a user can copy. Usage: $0 README.md
set -euo pipefail
readme=$1
root=$(dirname "$readme")
fail() { echo "README.md's first 40 lines: $*" >&2; exit 1; }
screen=$(head -n 40 "$readme")
grep -q '^## Install' <<<"$screen" || fail "no '## Install' heading"
code=$(awk '/^```/ {inside = !inside; next} inside' <<<"$screen")  # what a user copies
for install in 'kubectl krew install' 'docker load' 'helm install gpufit deploy/helm/gpufit' 'make build'; do
  grep -qF "$install" <<<"$code" || fail "no '$install' command in a code block"
done
grep -qE '^(kubectl gpufit|gpufit) plan( |$)' <<<"$code" || fail "no 'kubectl gpufit plan' in a code block"
[[ -f $root/deploy/helm/gpufit/Chart.yaml ]] || fail "the chart deploy/helm/gpufit is missing"
[[ -f $root/packaging/image/build-image.sh && -f $root/packaging/release.sh ]] || fail "make image/release scripts missing"
echo "README.md: Install and the one command within the first 40 lines"
