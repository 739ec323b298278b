#!/usr/bin/env bash
# Writes OUT (gpufit.1.gz) from the built binary's own help: help2man makes the page from
# `gpufit --help` and `--version`, STATIC_H2M adds its hand-written sections, and a COMMANDS
# section is made here from `gpufit CMD [SUB] --help` of every command CLI11 lists, each
# option a tagged paragraph. gzip -n as Debian does (no name or time stamp in the archive).
# Usage: make_man_page.sh HELP2MAN BIN_DIR STATIC_H2M OUT
set -euo pipefail
help2man=$1 bin_dir=$2 static_h2m=$3 out=$4
# On PATH by its name, so that CLI11's usage lines say `gpufit`, not the build tree's path.
export PATH="$bin_dir:/usr/bin:/bin"
commands_h2m="${out%.gz}.commands.h2m"
mkdir -p "$(dirname "$out")"

# CLI11's help, as roff: "  HEAD   description" lines (the description at column 31, or on
# the next lines when the head is longer) become .TP paragraphs, "Options:" and the like bold
# lines, anything else plain text.
to_roff() {
  awk '
    function esc(s) { gsub(/\\/, "\\e", s); sub(/^[.'\'']/, "\\\\\\&&", s); return s }
    function head(s) { s = esc(s); gsub(/-/, "\\-", s); return "\\fB" s "\\fR" }
    function pad(s) { return s ~ /^                              / }  # 30 spaces: a description line
    { line[NR] = $0 }
    END {
      for (i = 1; i <= NR; i++) {
        s = line[i]
        if (s == "") continue
        if (pad(s)) { sub(/^ +/, "", s); print esc(s); continue }
        if (s ~ /^  [^ ]/) {
          print ".TP"
          if (!pad(line[i + 1]) && length(s) > 30 && substr(s, 30, 1) == " ") {
            h = substr(s, 3, 28); sub(/ +$/, "", h); print head(h); print esc(substr(s, 31))
          } else {
            print head(substr(s, 3))
          }
          continue
        }
        if (s ~ /^[A-Z][a-z]+:$/) { print ".PP"; print "\\fB" s "\\fR"; continue }
        print ".PP"; print esc(s)
      }
    }
  '
}
subcommands() { awk '/^Subcommands:$/ { on = 1; next } on && /^  [^ ]/ { print $1 } on && /^$/ { on = 0 }'; }

emit() {  # emit CMD...: the section of `gpufit CMD... --help`, then of each of its subcommands
  local help
  help=$(gpufit "$@" --help)
  printf '.SS "gpufit %s"\n' "$*"
  to_roff <<<"$help"
  local sub
  for sub in $(subcommands <<<"$help"); do emit "$@" "$sub"; done
}

{
  echo "[COMMANDS]"
  for cmd in $(gpufit --help | subcommands); do emit "$cmd"; done
} >"$commands_h2m"

"$help2man" --no-info --section=1 --no-discard-stderr \
  "--name=right-size and co-locate GPU workloads from their real telemetry" \
  "--include=$static_h2m" "--include=$commands_h2m" --output="${out%.gz}" gpufit
gzip -n -9 -f "${out%.gz}"
