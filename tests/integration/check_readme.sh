#!/usr/bin/env bash
# Runs the README's runnable examples (run by scripts/test.sh; exit 0 pass, 77 skip, 1 fail).
# A ```sh or ```bash block right after a line `<!-- runnable -->` (an HTML comment: invisible
# on GitHub) is cheap to type and must work as written. The marked blocks run in README order,
# each with `bash -euo pipefail`, in one temporary directory holding copies of configs/ and data/
# and `build/stacklab` (and `stacklab` on PATH) pointing at the built binary, so what one block
# writes (runs/quickstart) the next can read, and nothing is left in the tree. Fails when a marked
# block exits non-zero, and when no marked block runs one of train, sample, validate, toyblock
# and registry (a check with nothing to run would always pass).
# Heavy blocks (scripts/run.sh, test.sh, reproduce.sh, cmake, Slurm) stay unmarked.
# Usage: bash tests/integration/check_readme.sh [README.md]; STACKLAB_BIN overrides build/stacklab.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
README="$(cd "$(dirname "${1:-$ROOT/README.md}")" && pwd)/$(basename "${1:-README.md}")"
BIN="${STACKLAB_BIN:-$ROOT/build/stacklab}"
[[ -x "$BIN" ]] || { echo "check_readme: $BIN not built (run scripts/setup.sh)" >&2; exit 77; }
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "check_readme: FAIL: $*" >&2; fails=$((fails + 1)); }

# The marked blocks, one file each: $tmp/blocks/NNN.sh, its first line a comment with the
# README line it starts at.
mkdir -p "$tmp/blocks"
awk -v dir="$tmp/blocks" '
  /^<!-- runnable -->[[:space:]]*$/ { marked = NR; next }
  marked && NR == marked + 1 {
    marked = 0
    if ($0 !~ /^```(sh|bash)[[:space:]]*$/) { printf "line %d: <!-- runnable --> is not followed by a ```sh block\n", NR - 1 > "/dev/stderr"; bad = 1; next }
    n++; file = sprintf("%s/%03d.sh", dir, n); inblock = 1
    printf "# README.md line %d\n", NR > file
    next
  }
  inblock && /^```[[:space:]]*$/ { inblock = 0; close(file); next }
  inblock { print > file }
  { marked = 0 }
  END { if (inblock) { print "a runnable block is not closed" > "/dev/stderr"; bad = 1 } exit bad }
' "$README" || fail "malformed runnable markers in $README (see above)"

blocks=("$tmp"/blocks/*.sh)
[[ -e "${blocks[0]}" ]] || { fail "no block in $README is marked <!-- runnable -->"; exit 1; }
for cmd in train sample validate toyblock registry; do
  grep -qE "(^|[[:space:]/])stacklab $cmd( |$)" "${blocks[@]}" || fail "no runnable block runs 'stacklab $cmd'"
done

# The working copy: what the examples read, and the binary where the README says it is.
work="$tmp/work"
mkdir -p "$work/build" "$tmp/bin"
cp -r "$ROOT/configs" "$ROOT/data" "$work/"
ln -s "$BIN" "$work/build/stacklab"
ln -s "$BIN" "$tmp/bin/stacklab"

for block in "${blocks[@]}"; do
  where="$(head -1 "$block" | sed 's/^# //')"
  start=$SECONDS
  if (cd "$work" && PATH="$tmp/bin:$PATH" bash -euo pipefail "$block") >"$block.log" 2>&1; then
    echo "check_readme: ok: the block at $where ($((SECONDS - start)) s)"
  else
    tail -15 "$block.log" >&2
    fail "the block at $where exited non-zero (its commands: $(grep -v '^#' "$block" | tr '\n' ';'))"
  fi
done

((fails == 0)) || { echo "check_readme: $fails failure(s)" >&2; exit 1; }
echo "check_readme: ${#blocks[@]} runnable README blocks passed"
