"""Environment guards (conventions §3): the locked torch, torchvision and timm; offline assets."""

from pathlib import Path

import torch


def test_the_locked_torch_torchvision_and_timm():
    """torch 2.14.1 with its torchvision pair (a mismatched pair fails at import, "operator
    torchvision::nms does not exist") and timm, whose ViT the papers' vision models are."""
    import timm
    import torchvision

    assert torch.__version__.split("+")[0] == "2.14.1"
    assert torchvision.__version__.split("+")[0] == "0.29.1" and timm.__version__ == "1.0.31"
    assert torchvision.ops.nms(torch.zeros(1, 4), torch.ones(1), 0.5).tolist() == [0]


def test_offline_assets_locatable():
    from sklearn.datasets import load_digits

    assert load_digits().images.shape == (1797, 8, 8)
    from attnbias.data.offline import minilm_path, tweets_csv_path

    assert tweets_csv_path().stat().st_size > 1_000_000
    assert (minilm_path() / "config.json").exists()


def test_readme_test_command_is_what_ci_runs():
    root = Path(__file__).resolve().parents[2]
    ci = (root / ".ci" / "run").read_text()
    readme = (root / "README.md").read_text()
    line = next(ln.strip() for ln in ci.splitlines() if "pytest" in ln and "pip install" in ln)
    assert line in readme


def test_layout_limits():
    """The project's readability limits (CONTRIBUTING): package modules ≤ 500 lines, rule files
    ≤ 300, the schemas together < 1,500 (each settings block defined once)."""
    root = Path(__file__).resolve().parents[2]
    long_py = {
        str(p.relative_to(root)): n
        for p in (root / "src" / "attnbias").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long_py, long_py
    long_smk = {
        p.name: n
        for p in (root / "workflow" / "rules").glob("*.smk")
        if (n := len(p.read_text().splitlines())) > 300
    }
    assert not long_smk, long_smk
    schema_lines = sum(
        len(p.read_text().splitlines()) for p in (root / "workflow" / "schemas").glob("*.yaml")
    )
    assert schema_lines < 1500, schema_lines


def test_files_sharing_a_session_set_up_share_a_worker():
    """Every test file that uses the end-to-end run (``quick_run``) is in its worker group
    (tests/conftest.py, ``SHARED_GROUPS``); a file outside it would make a second end-to-end run
    on another worker, about 1,100 CPU-seconds more."""
    from conftest import ROOT, xdist_group_of

    users = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "tests").rglob("test_*.py")
        if "quick_run" in p.read_text() and p != Path(__file__).resolve()
    ]
    assert "tests/integration/test_end_to_end.py" in users
    assert {f: xdist_group_of(f"{f}::t") for f in users} == dict.fromkeys(users, "quick_run")
