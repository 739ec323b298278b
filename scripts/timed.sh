# Sourced by scripts/test, scripts/demo and .ci/run: `timed NAME COMMAND...` runs COMMAND and
# then prints one line, `stage NAME: N s`, with its wall time (and its exit status when it
# failed), so that a CI log shows where the time went (issue 36). Returns COMMAND's status.
timed() {
  local name=$1 started=$SECONDS status=0
  shift
  "$@" || status=$?
  if ((status == 0)); then
    printf 'stage %s: %d s\n' "$name" $((SECONDS - started))
  else
    printf 'stage %s: %d s, FAILED (exit %d)\n' "$name" $((SECONDS - started)) "$status"
  fi
  return "$status"
}
