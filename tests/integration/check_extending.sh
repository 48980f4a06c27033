#!/usr/bin/env bash
# Follows docs/extending.md in a temporary copy of the source tree (run by scripts/test.sh; exit 0
# pass, 77 skip, 1 fail): adds a throwaway config key (model.throwaway_key, default 0.25, > 0) and a
# throwaway norm type ("throwaway", LayerNorm's parameters and forward) the way the doc says, builds
# only the stacklab target, and checks that each step is needed and enough:
#   - the enum spelled without its registry entry does not build (-Werror=switch, one object);
#   - the binary lists the norm (`stacklab registry`), trains with it, and validates, rejects and
#     suggests the key ("did you mean");
#   - scripts/stacklab/config_defaults.json is stale until regenerated with
#     `stacklab validate --defaults` (tests/python/test_checkpoint_config.py, the Python side of
#     the pin in tests/train/checkpoint_test.cpp), and current after;
#   - docs/reference.md's key table misses the key until its row lists it
#     (tests/python/test_reference_config_table.py);
#   - the README's wirings block differs from `stacklab registry --markdown` until pasted;
#   - with torch, scripts/stacklab/runs/torch_model.py reports the norm as unmirrored until its NORMS
#     line exists, and reads the binary's default model section.
# The copy is built at -O0 with tests off (ccache is used when installed). Nothing is written to the source tree. Usage: bash tests/integration/check_extending.sh
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${STACKLAB_PYTHON:-python3}"
command -v cmake >/dev/null || { echo "check_extending: cmake not found" >&2; exit 77; }
command -v python3 >/dev/null || { echo "check_extending: python3 not found" >&2; exit 77; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
SRC="$tmp/src" BUILD="$tmp/build"
fails=0
fail() { echo "check_extending: FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "check_extending: ok: $*"; }

# ---- the copy: the tracked files (or, outside git, the tree without its build folders) -------
mkdir -p "$SRC"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
    xargs -0 cp --parents -t "$SRC") || { echo "check_extending: copy failed" >&2; exit 1; }
else
  tar -C "$ROOT" --exclude='./build*' --exclude='./runs' -cf - . | tar -C "$SRC" -xf - ||
    { echo "check_extending: copy failed" >&2; exit 1; }
fi

# edit FILE PYTHON: applies a Python edit to the copy's FILE (`s` holds its text); the edit asserts
# that its anchor exists, so a doc step that no longer matches the code fails here, by name.
edit() {
  local file="$1" code="$2"
  python3 - "$SRC/$file" "$code" <<'EOF' || fail "could not apply the doc's step to $1 (its anchor is gone?)"
import re, sys
path, code = sys.argv[1], sys.argv[2]
s = open(path, encoding="utf-8").read()
env = {"s": s, "re": re}
exec(code, env)
if env["s"] == s:
    raise SystemExit(f"{path}: unchanged")
open(path, "w", encoding="utf-8").write(env["s"])
EOF
}

# ---- docs/extending.md: a config key (ModelConfig, visit_model, validate_model) ---------------
edit src/config/config.h '
a = "struct ModelConfig {\n"
assert a in s
s = s.replace(a, a + "  double throwaway_key = 0.25;  // tests/integration/check_extending.sh\n", 1)'
edit src/config/config.cpp '
m = re.search(r"void visit_model\(S& m, V& v\) \{\n", s)
assert m
s = s[:m.end()] + "  v(\"throwaway_key\", m.throwaway_key);\n" + s[m.end():]'
validate_file="$(cd "$SRC" && grep -l 'void validate_model(' src/config/*.cpp | head -n 1)"
[[ -n "$validate_file" ]] || fail "no validate_model in src/config/*.cpp"
edit "${validate_file:-src/config/validate.cpp}" '
m = re.search(r"void validate_model\(const ModelConfig& m, const Validator& v\) \{\n", s)
assert m
s = s[:m.end()] + "  v.positive(\"model.throwaway_key\", m.throwaway_key);\n" + s[m.end():]'

# ---- docs/extending.md, adding a norm: 1. the enum value and its spelling ----------------------
edit src/config/choices.h '
s, n = re.subn(r"(enum class NormKind \{[^}]*?)\s*\};", r"\1, Throwaway };", s, count=1)
assert n == 1
a = "SL_CHOICES(NormKind,"
assert a in s
s = s.replace(a, a + " {NormKind::Throwaway, \"throwaway\"},", 1)'

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O0 (build type None, no flags): the checks run no kernel long enough for speed to matter.
if ! cmake -S "$SRC" -B "$BUILD" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=None \
    -DSTACKLAB_BUILD_TESTS=OFF >"$tmp/configure.log" 2>&1; then
  cat "$tmp/configure.log" >&2
  echo "check_extending: FAIL: cmake could not configure the copy" >&2
  exit 1
fi
jobs="$(nproc 2>/dev/null || echo 2)"

# The table of the doc: "the registry entry forgotten -> the build fails". One object, not a build.
wiring_obj="src/nn/wiring.cpp.o"  # the Makefile generator's name for the object
((${#generator[@]})) && wiring_obj="CMakeFiles/stacklab_lib.dir/src/nn/wiring.cpp.o"
if cmake --build "$BUILD" --target "$wiring_obj" >"$tmp/wiring.log" 2>&1 ||
    ! grep -q "Throwaway.*not handled in switch\|-Werror=switch" "$tmp/wiring.log"; then
  fail "with NormKind::Throwaway spelled but no registry entry, src/nn/wiring.cpp compiled (or failed otherwise); the doc promises a -Werror=switch error"
  tail -n 20 "$tmp/wiring.log" >&2
else
  ok "the spelled enum without its registry entry does not build (-Werror=switch)"
fi

# ---- 2. the registry entry and its case in norm_spec() ----------------------------------------
edit src/nn/wiring.cpp '
a = "const NormSpec& norm_spec(NormKind kind) {\n  switch (kind) {\n"
assert a in s
entry = ("namespace {\nconst NormSpec kThrowaway{NormKind::Throwaway, \"throwaway: layernorm again\", "
         "kLayerNorm.params, kLayerNorm.forward};\n}  // namespace\n\n")
s = s.replace(a, entry + a + "    case NormKind::Throwaway:\n      return kThrowaway;\n", 1)'

echo "check_extending: building stacklab in a copy of the tree ($BUILD, -O0, -j$jobs)"
t0=$SECONDS
if ! nice -n 10 cmake --build "$BUILD" --target stacklab -j"$jobs" >"$tmp/build.log" 2>&1; then
  tail -n 40 "$tmp/build.log" >&2
  echo "check_extending: FAIL: the copy with the throwaway key and norm does not build" >&2
  exit 1
fi
ok "built in $((SECONDS - t0)) s"
BIN="$BUILD/stacklab"

# ---- the key and the norm in the binary ---------------------------------------------------------
cd "$tmp" || exit 1
if "$BIN" registry | grep -Eq '^  throwaway +throwaway: layernorm again'; then
  ok "stacklab registry lists model.norm throwaway"
else
  fail "stacklab registry does not list the throwaway norm"
fi
if [[ "$("$BIN" validate --defaults | python3 -c 'import json,sys; print(json.load(sys.stdin)["model"].get("throwaway_key"))')" == 0.25 ]]; then
  ok "stacklab validate --defaults has model.throwaway_key 0.25"
else
  fail "stacklab validate --defaults lacks model.throwaway_key 0.25"
fi
printf '{"model": {"throwaway_key": 0.5, "norm": "throwaway", "n_layer": 1, "n_embd": 16, "n_head": 2,
  "block_size": 8}, "train": {"max_iters": 2, "batch_size": 2, "eval_interval": 2, "eval_iters": 1,
  "out_dir": "runs", "save_best": false}, "log": {"params": false}}\n' >good.json
if "$BIN" validate --quiet good.json >/dev/null 2>"$tmp/v.err"; then
  ok "a config with model.throwaway_key and model.norm throwaway validates"
else
  fail "a config with the key and the norm does not validate: $(cat "$tmp/v.err")"
fi
if "$BIN" train good.json >"$tmp/train.log" 2>&1 && [[ -s runs/good/summary.json ]]; then
  ok "a 2-step run with the throwaway norm trains"
else
  fail "a 2-step run with the throwaway norm failed: $(tail -n 5 "$tmp/train.log")"
fi
if ! "$BIN" validate good.json --model.throwaway_key=-1 >/dev/null 2>"$tmp/v.err" &&
    grep -q "model.throwaway_key: must be > 0" "$tmp/v.err"; then
  ok "validate_model's range check names the key"
else
  fail "model.throwaway_key -1 was not refused by its range check: $(cat "$tmp/v.err")"
fi
if ! "$BIN" validate good.json --model.throwaway_kye=1 >/dev/null 2>"$tmp/v.err" &&
    grep -q "did you mean 'throwaway_key'" "$tmp/v.err"; then
  ok "a misspelled key is pointed at model.throwaway_key"
else
  fail "model.throwaway_kye did not get \"did you mean 'throwaway_key'\": $(cat "$tmp/v.err")"
fi

# run_py TEST: one unittest of the copy's tests/python, against the copy's binary.
run_py() {
  (cd "$SRC/tests/python" && STACKLAB_BIN="$BIN" PYTHONPATH="$SRC/scripts" MPLBACKEND=Agg \
    "$PY" -m unittest "$1" >"$tmp/py.log" 2>&1)
}
# needed_then_enough WHAT TEST STEP...: TEST fails before the step and passes after it.
needed_then_enough() {
  local what="$1" test="$2"
  shift 2
  if run_py "$test"; then
    fail "$what: $test passed before the step, so it does not check it"
  fi
  "$@"
  if run_py "$test"; then
    ok "$what: $test fails before the step and passes after"
  else
    fail "$what: $test still fails after the step: $(tail -n 8 "$tmp/py.log")"
  fi
}

# ---- the steps the doc must name for a config key ------------------------------------------------
regenerate_defaults() { "$BIN" validate --defaults >"$SRC/scripts/stacklab/config_defaults.json"; }
needed_then_enough "config_defaults.json regenerated (stacklab validate --defaults)" \
  test_checkpoint_config.Defaults regenerate_defaults
# shellcheck disable=SC2016  # the edit is Python; its backticks are Markdown
add_table_row() {
  edit docs/reference.md '
m = re.search(r"^\| `model` \| .*?(?= \|\s*$)", s, re.M)
assert m
s = s[:m.end()] + ", `throwaway_key` (0.25)" + s[m.end():]'
}
needed_then_enough "docs/reference.md key table row" test_reference_config_table add_table_row

# ---- 4. the README table: paste the wirings block of `stacklab registry --markdown` ---------------
"$BIN" registry --markdown >"$tmp/registry.md"
block() {  # block NAME FILE: the lines between the markers
  awk -v n="$1" '$0 == "<!-- /registry:" n " -->" { inside = 0 } inside { print }
                 $0 == "<!-- registry:" n " -->" { inside = 1 }' "$2"
}
mapfile -t holders < <(cd "$SRC" && grep -lx '<!-- registry:wirings -->' README.md docs/*.md)
((${#holders[@]})) || fail "no file of README.md and docs/ holds a <!-- registry:wirings --> block"
for f in "${holders[@]}"; do
  if [[ "$(block wirings "$SRC/$f")" == "$(block wirings "$tmp/registry.md")" ]]; then
    fail "$f: the wirings block already equals the generated one with the throwaway norm"
  fi
  python3 - "$SRC/$f" "$tmp/registry.md" <<'EOF'
import re, sys
doc, gen = (open(p, encoding="utf-8").read() for p in sys.argv[1:3])
pat = re.compile(r"^<!-- registry:wirings -->\n.*?^<!-- /registry:wirings -->\n", re.S | re.M)
new = pat.search(gen).group(0)
open(sys.argv[1], "w", encoding="utf-8").write(pat.sub(lambda _: new, doc))
EOF
  if [[ "$(block wirings "$SRC/$f")" == "$(block wirings "$tmp/registry.md")" ]] &&
      block wirings "$SRC/$f" | grep -q throwaway; then
    ok "$f wirings block: differs before the paste, equals stacklab registry --markdown after"
  else
    fail "$f: the wirings block does not equal the generated one after the paste"
  fi
done

# ---- 3. the PyTorch mirror (only where torch is installed) ------------------------------------------
"$BIN" registry --json >"$tmp/registry.json"
"$BIN" validate --defaults >"$tmp/defaults.json"
mirror_check() {
  (cd "$tmp" && PYTHONPATH="$SRC/scripts" "$PY" - "$tmp/registry.json" "$tmp/defaults.json" <<'EOF'
import json, sys
from stacklab import torch_model
registry, defaults = (json.load(open(p)) for p in sys.argv[1:3])
missing = torch_model.missing_mirrors(registry)
print("missing:", missing)
torch_model.resolve_model_config({**defaults["model"], "norm": "throwaway"})
sys.exit(1 if missing else 0)
EOF
  ) >"$tmp/mirror.log" 2>&1
}
if "$PY" -c "import torch" >/dev/null 2>&1; then
  mirror_check && fail "torch_model.py mirrored the throwaway norm before its NORMS line"
  edit scripts/stacklab/runs/torch_model.py '
a = "NORMS = {\n"
assert a in s
s = s.replace(a, a + "    \"throwaway\": lambda m, C: LayerNorm(C, m[\"bias\"], m[\"norm_eps\"]),\n", 1)'
  # A model key the PyTorch model does not read still has to be known to its copy of the defaults.
  if grep -q '^MODEL_DEFAULTS = {' "$SRC/scripts/stacklab/runs/torch_model.py"; then
    edit scripts/stacklab/runs/torch_model.py '
a = "MODEL_DEFAULTS = {\n"
s = s.replace(a, a + "    \"throwaway_key\": 0.25,\n", 1)'
  fi
  if mirror_check; then
    ok "torch_model.py: the norm unmirrored before its NORMS line, mirrored after; the binary's model defaults read"
  else
    fail "torch_model.py after the mirror step: $(tail -n 5 "$tmp/mirror.log")"
  fi
else
  echo "check_extending: SKIP (loud): the PyTorch mirror step: no torch for $PY"
fi

if ((fails)); then
  echo "check_extending: $fails check(s) failed" >&2
  exit 1
fi
echo "check_extending: docs/extending.md's steps for a config key and a norm hold"
