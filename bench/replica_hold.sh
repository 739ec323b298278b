#!/usr/bin/env bash
# Issue 41: gpufit's replica schedule before and after the minimum hold per level
# (inference/policies.h, ReplicaHoldSeconds). Runs two gpufit binaries on the same inputs
# and prints, per service, the schedule's level changes, its cold starts in the replay and
# its GPU-hours, plus the SLO it met:
#   * the demo's two services (`gpufit demo`, a generated day);
#   * the Azure LLM conversation trace and GenTD26 Stable Diffusion
#     (`gpufit inference --services examples/inference-services.yaml`);
#   * the GenTD26 LoRA trace's walk-forward (`gpufit inference backtest`), summed over
#     its test days.
# Usage: bench/replica_hold.sh BEFORE_GPUFIT AFTER_GPUFIT
#   BEFORE_GPUFIT: gpufit built from the commit before the hold (e.g. a worktree of the
#   merge base); AFTER_GPUFIT: this tree's build/apps/gpufit/gpufit. Needs jq and the
#   traces under $GPUFIT_DATA (default ../shared/data). Takes a few minutes.
set -euo pipefail
if [[ $# -ne 2 || ! -x $1 || ! -x $2 ]]; then
  echo "usage: $0 BEFORE_GPUFIT AFTER_GPUFIT (two gpufit executables)" >&2
  exit 2
fi
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
export GPUFIT_DATA=${GPUFIT_DATA:-$root/../shared/data}
lora=$GPUFIT_DATA/gentd26-lora/lora_request_trace_first14d.csv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One line per service of an inference section: name, level changes (the schedule's runs
# less one), cold starts, GPU-hours, SLO attainment of gpufit's row.
services() {
  jq -r '(.inference // .) | .services[] | . as $s | ($s.policies[] | select(.policy == "gpufit")) as $g |
    [$s.name, (($s.recommendation.schedule | length) - 1), $g.cold_starts, $g.gpu_hours, $g.slo_attainment] | @tsv' "$1"
}
# The walk-forward, summed over its test days: cold starts, GPU-hours (its JSON has no
# schedule, so no level changes: "-"), and the lowest day's SLO attainment.
walk_forward() {
  jq -r '[ "lora walk-forward (" + (.tests | length | tostring) + " test days)", "-",
           ([.tests[].gpufit_cold_starts] | add), ([.tests[].gpufit.gpu_hours] | add),
           ([.tests[].gpufit.slo_attainment] | min) ] | @tsv' "$1"
}

for side in before after; do
  bin=$1
  [[ $side == after ]] && bin=$2
  "$bin" demo -f json >"$work/demo-$side.json"
  (cd "$root" && "$bin" inference --services examples/inference-services.yaml --format json) >"$work/inf-$side.json"
  if [[ -f $lora ]]; then "$bin" inference backtest --requests "$lora" --format json >"$work/lora-$side.json"; fi
done

printf '%-34s %-6s %13s %11s %10s %8s\n' service side level_changes cold_starts GPU-hours "min SLO"
for file in demo inf lora; do
  [[ -f $work/$file-before.json ]] || continue
  for side in before after; do
    if [[ $file == lora ]]; then walk_forward "$work/$file-$side.json"; else services "$work/$file-$side.json"; fi |
      while IFS=$'\t' read -r name changes cold hours slo; do
        printf '%-34s %-6s %13s %11s %10.2f %8.4f\n' "$name" "$side" "$changes" "$cold" "$hours" "$slo"
      done
  done
done
