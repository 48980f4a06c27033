#!/usr/bin/env bash
# Finds a Python 3 with the modules stacklab's scripts need and prints its path.
# Tries $STACKLAB_PYTHON, then /usr/bin/python3 (Debian's, where apt installs numpy/torch), then
# python3 on PATH (often a pyenv/venv interpreter without them).
#
#   PY="$(scripts/find_python.sh)"          # needs numpy, matplotlib, torch (parity checks)
#   PY="$(scripts/find_python.sh --plot)"   # needs numpy, matplotlib only (plots)
#   source scripts/find_python.sh; PY="$(stacklab_find_python --plot)"
# Exits (or returns) 1 with an install hint on stderr when no interpreter has the modules.

stacklab_find_python() {
  local modules="numpy, matplotlib, torch" packages="python3-numpy python3-matplotlib python3-torch"
  case "${1:-}" in
    "" | --torch) ;;
    --plot)
      modules="numpy, matplotlib"
      packages="python3-numpy python3-matplotlib"
      ;;
    -h | --help)
      echo "usage: find_python.sh [--torch | --plot]   (default --torch: numpy, matplotlib, torch)"
      return 0
      ;;
    *)
      echo "find_python.sh: unknown option '$1' (expected --torch or --plot)" >&2
      return 2
      ;;
  esac

  local candidates=() tried=() c
  [[ -n "${STACKLAB_PYTHON:-}" ]] && candidates+=("$STACKLAB_PYTHON")
  candidates+=(/usr/bin/python3)
  c="$(command -v python3 2>/dev/null || true)"
  [[ -n "$c" ]] && candidates+=("$c")

  for c in "${candidates[@]}"; do
    tried+=("$c")
    if [[ -x "$c" ]] || command -v "$c" >/dev/null 2>&1; then
      if "$c" -c "import sys; assert sys.version_info[0] == 3; import ${modules}" >/dev/null 2>&1; then
        printf '%s\n' "$c"
        return 0
      fi
    fi
    if [[ -n "${STACKLAB_PYTHON:-}" && "$c" == "$STACKLAB_PYTHON" ]]; then
      echo "find_python.sh: STACKLAB_PYTHON=$STACKLAB_PYTHON cannot import ${modules}; trying others" >&2
    fi
  done

  {
    echo "find_python.sh: no Python 3 that can 'import ${modules}' (tried: ${tried[*]})."
    echo "  Install them for Debian's Python:  apt-get install ${packages}"
    echo "  or point STACKLAB_PYTHON at an interpreter that has them."
  } >&2
  return 1
}

# Executed (not sourced): run it and exit with its status.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  stacklab_find_python "$@"
  exit $?
fi
