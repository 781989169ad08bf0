#!/usr/bin/env bash
# Checks the Python package the way a user gets it, without touching the checkout:
#   1. `python -m build` (sdist, then the wheel from the sdist) into a temp dir;
#   2. a scratch venv outside the repository installs that wheel by file and imports it;
#   3. the same venv, from a scratch directory, runs the README's install line
#      `pip install <path to clients/python>` and imports it again;
#   4. the wheel's metadata is complete (license, readme, urls, keywords, classifiers);
#   5. `git status --porcelain --ignored clients/python` is the same before and after, so no
#      build/, *.egg-info or other file was written into the checkout (ignored files count).
#
#   clients/python/package_check.sh          needs python3 (3.10+) and the index (for grpcio,
#                                            protobuf and the isolated build's flit_core)
# The frontend is `build` from clients/python/.venv (pinned in requirements-dev.txt) when that
# venv exists, else it is installed into the scratch space.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel)"
REL="${HERE#"$ROOT"/}"
PYTHON="${PYTHON:-python3}"
step() { printf '==> %s\n' "$*"; }
fail() { printf 'package_check: %s\n' "$*" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
case "$work/" in "$ROOT"/*) fail "the scratch dir $work is inside the repository" ;; esac

tree_state() { git -C "$ROOT" status --porcelain --ignored --untracked-files=all -- "$REL" \
  | grep -v -e "^!! $REL/.venv/" -e "^!! $REL/.mypy_cache/" || true; }
before="$(tree_state)"

step "python -m build -> $work/dist"
if [ -x "$HERE/.venv/bin/python" ] && "$HERE/.venv/bin/python" -c 'import build' 2>/dev/null; then
  frontend="$HERE/.venv/bin/python"
else
  "$PYTHON" -m venv "$work/buildenv"
  "$work/buildenv/bin/pip" install --quiet --disable-pip-version-check build==1.6.1
  frontend="$work/buildenv/bin/python"
fi
"$frontend" -m build --outdir "$work/dist" "$HERE" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; fail "python -m build failed"; }
wheel="$(ls "$work"/dist/*.whl)"
sdist="$(ls "$work"/dist/*.tar.gz)"
echo "built $(basename "$wheel") and $(basename "$sdist")"

step "wheel metadata"
meta="$("$frontend" - "$wheel" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    print(z.read(name).decode())
PY
)"
for field in "Name: entropy-diode" "License-Expression: Apache-2.0" "Summary: " "Keywords: " \
  "Classifier: Typing :: Typed" "Project-URL: Repository, https://github.com/" \
  "Description-Content-Type: text/markdown" "Requires-Python: >=3.10" "Requires-Dist: grpcio"; do
  grep -qF "$field" <<<"$meta" || fail "METADATA has no '$field'"
done
grep -qF "## Install" <<<"$meta" || fail "METADATA does not carry the README"
echo "metadata complete"

import_check() { # import_check VENV: the installed copy, not the checkout, with its type info
  (cd "$work/scratch" && "$1/bin/python" - "$HERE" <<'PY'
import os, sys
import entropy_diode
from entropy_diode import EntropyClient, InvalidArgumentError, StreamOptions, parse_endpoint
here = sys.argv[1]
path = os.path.dirname(entropy_diode.__file__)
assert not path.startswith(here), f"imported from the checkout: {path}"
assert os.path.exists(os.path.join(path, "py.typed")), "py.typed missing"
assert os.path.exists(os.path.join(path, "_gen/entropy/v1/entropy_pb2.pyi")), "stubs missing"
assert parse_endpoint("example.com").tls and StreamOptions().reconnect_budget == 30
try:
    EntropyClient("127.0.0.1:1", "")
except InvalidArgumentError:
    pass
else:
    raise AssertionError("an empty key was accepted")
print("imported", entropy_diode.__name__, "from", path)
PY
  )
}

mkdir -p "$work/scratch"
step "scratch venv: pip install the wheel by file"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
import_check "$work/venv"

step "scratch venv: the README's install line, pip install $HERE"
"$work/venv/bin/pip" uninstall --quiet --yes entropy-diode
(cd "$work/scratch" && "$work/venv/bin/pip" install --quiet --disable-pip-version-check "$HERE")
import_check "$work/venv"

step "the checkout is unchanged (git status --porcelain --ignored $REL)"
after="$(tree_state)"
if [ "$before" != "$after" ]; then
  diff <(echo "$before") <(echo "$after") >&2 || true
  fail "building or installing wrote into the checkout"
fi
if [ -z "$(git -C "$ROOT" status --porcelain -- "$REL")" ]; then
  echo "git status --porcelain $REL: empty"
else
  echo "git status --porcelain $REL: as before (uncommitted work was already there)"
fi
echo "package_check: ok"
