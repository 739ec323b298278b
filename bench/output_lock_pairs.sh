#!/usr/bin/env bash
# Issue 40: N pairs (default 100) of concurrent `gpufit plan` runs into one --out, each pair
# checked to leave plan.json, plan.md and the manifests of one run (the output lock,
# src/gpufit/core/output_lock.h). The e2e suite runs 10 pairs; this runs the break test's size.
#   bench/output_lock_pairs.sh [PAIRS] [BUILD_DIR]
set -euo pipefail
pairs=${1:-100}
build=${2:-build}
cmake --build "$build" --target gpufit cli_hazards_e2e_test >/dev/null
GPUFIT_LOCK_PAIRS=$pairs "$build/tests/e2e/cli_hazards_e2e_test" --gtest_filter='OutputLock.*'
