"""Provenance names the environment: every JSON sidecar records the lock the README's install
read (``lock``, ``lock_sha256``) beside the package versions (attnbias.io.provenance)."""

import hashlib
import json

import pandas as pd
from conftest import ROOT

from attnbias import io


def test_the_lock_is_named_by_its_path_and_sha256(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "lock.txt").write_bytes(b"numpy==2.4.6 \\\n    --hash=sha256:00\n")
    got = io.lock_provenance(tmp_path)
    want = hashlib.sha256(b"numpy==2.4.6 \\\n    --hash=sha256:00\n").hexdigest()
    assert got == {"lock": "requirements/lock.txt", "lock_sha256": want}


def test_a_copy_without_a_lock_records_none(tmp_path):
    assert io.lock_provenance(tmp_path) == {"lock": None, "lock_sha256": None}


def test_the_repository_lock_is_found_from_the_package():
    lock = ROOT / "requirements" / "lock.txt"
    assert io.lock_provenance() == {
        "lock": "requirements/lock.txt",
        "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest(),
    }


def test_sidecars_carry_the_lock_beside_the_package_versions(tmp_path):
    csv = tmp_path / "d.csv"
    io.save_data(pd.DataFrame({"x": [1.0]}), {"columns": {"x": "a number"}}, csv, preset="quick")
    prov = json.loads(io.sidecar(csv).read_text())["provenance"]
    assert prov["packages"]["torch"] and prov["preset"] == "quick"
    assert prov["lock"] == "requirements/lock.txt"
    assert prov["lock_sha256"] == io.lock_provenance()["lock_sha256"]
    assert len(prov["lock_sha256"]) == 64
