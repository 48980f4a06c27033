#!/usr/bin/env bash
# Makes `import stacklab` work from any folder: writes stacklab.pth (one line, the absolute path
# of this checkout's scripts/) into the site-packages Python reads at start-up: the user site of
# /usr/bin/python3 (python3 -m site --user-site; PYTHONUSERBASE moves it), or a virtual
# environment's when --python names its interpreter. No network, no pip (Debian's pip refuses
# installs outside a venv, PEP 668); nothing is copied, so edits in scripts/stacklab/ take effect.
#
#   bash scripts/link_package.sh                       # /usr/bin/python3, user site
#   bash scripts/link_package.sh --python .venv/bin/python3
#   bash scripts/link_package.sh --remove              # deletes the stacklab.pth it wrote
# Python then also finds scripts/*.py by name (claims, report, tier, ...): a module of your own
# with the same name in your working folder still wins (it comes first on sys.path).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3
remove=0
while (($#)); do
  case "$1" in
    --python) (($# >= 2)) || { echo "link_package: --python needs an interpreter path" >&2; exit 2; }; PY="$2"; shift ;;
    --remove) remove=1 ;;
    -h | --help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "link_package: unknown argument '$1' (--python PY, --remove)" >&2; exit 2 ;;
  esac
  shift
done
[[ -x "$PY" ]] || { echo "link_package: --python $PY: not an executable" >&2; exit 2; }

# A venv's own site-packages, else the user site (which a venv without --system-site-packages ignores).
SITE="$("$PY" -c 'import site, sys, sysconfig
print(sysconfig.get_paths()["purelib"] if sys.prefix != sys.base_prefix else site.getusersitepackages())')"
PTH="$SITE/stacklab.pth"
if ((remove)); then
  rm -f "$PTH"
  echo "link_package: removed $PTH"
  exit 0
fi
mkdir -p "$SITE"
printf '%s\n' "$ROOT/scripts" >"$PTH"
# The proof: import it from outside the checkout, with no PYTHONPATH.
where="$(cd / && env -u PYTHONPATH "$PY" -c 'import stacklab, os; print(os.path.dirname(stacklab.__file__))')" ||
  { echo "link_package: wrote $PTH but '$PY -c \"import stacklab\"' still fails (user site disabled?)" >&2; exit 1; }
echo "link_package: wrote $PTH; $PY imports stacklab from $where"
