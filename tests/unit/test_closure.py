"""attnbias.closure: the code a job depends on, from a static walk of the package's imports."""

from pathlib import Path

import pytest

from attnbias.closure import code_closure, script_closure

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "attnbias"
EXPERIMENT_MODULES = sorted(
    ".".join(p.relative_to(SRC).with_suffix("").parts)
    for p in (SRC / "experiments").rglob("*.py")
    if p.name != "__init__.py"
)


def closure(target):
    return code_closure(target, ROOT)


def test_maxmargin_synthetic_includes_metrics_core():
    files = closure("experiments.maxmargin.study.trajectories_fig9")
    assert "src/attnbias/metrics/core.py" in files  # `from ...metrics import cosine`
    assert "src/attnbias/experiments/maxmargin/study.py" in files
    assert "src/attnbias/experiments/maxmargin/__init__.py" in files  # runs on import
    assert "src/attnbias/svm/qp.py" in files and "src/attnbias/data/synthetic.py" in files
    # the package __init__ re-exports the ViT job too, but the synthetic job never runs it
    assert "src/attnbias/experiments/maxmargin/vit.py" not in files
    assert not any(f.startswith("src/attnbias/train/") for f in files)
    assert files == sorted(files) and files == closure("experiments.maxmargin.study")
    # each stage's function is followed to its module: Fig 1's stages never import metrics
    stage = closure("experiments.maxmargin.synthetic.svm_fig1")
    assert "src/attnbias/experiments/maxmargin/synthetic.py" in stage
    assert "src/attnbias/metrics/core.py" not in stage


def test_lowrank_lm_includes_what_the_hand_list_missed():
    files = closure("experiments.lowrank.lm.train_lm")
    for f in ("train/augment.py", "io.py", "data/hub.py", "train/engine.py", "models/gpt2.py"):
        assert f"src/attnbias/{f}" in files, f
    assert files == closure("experiments.lowrank.train_lm")  # re-exported by the package


def test_lazy_exports_are_followed():
    """experiments/fastrates/__init__ re-exports through an _EXPORTS table (PEP 562)."""
    synthetic = closure("experiments.fastrates.wonly_runs")
    assert "src/attnbias/experiments/fastrates/synthetic.py" in synthetic
    assert not any("finetune" in f or f.startswith("src/attnbias/train/") for f in synthetic)
    text = closure("experiments.fastrates.train_text")
    assert "src/attnbias/experiments/fastrates/finetune.py" in text
    assert "src/attnbias/train/engine.py" in text


@pytest.mark.parametrize("module", EXPERIMENT_MODULES)
def test_no_plotting_or_claims_module_in_a_computation(module):
    files = closure(module)
    outside = ("src/attnbias/plotting/", "src/attnbias/claims/")
    assert not [f for f in files if f.startswith(outside)]


def test_every_import_of_a_module_is_in_its_closure():
    """Each module's own `from attnbias... import` targets appear in its closure (a smoke check of
    the walk against a plain reading of the import lines)."""
    import ast

    for module in EXPERIMENT_MODULES:
        files = closure(module)
        path = SRC.joinpath(*module.split(".")[:-1], module.split(".")[-1] + ".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level and node.module:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*node.module.split("."))
                candidates = [target.with_suffix(".py"), target / "__init__.py"]
                found = any(str(c.relative_to(ROOT)) in files for c in candidates)
                assert found, (module, node.module)


def test_scripts_and_plot_modules():
    plot = script_closure("scripts/plot.py", ROOT)
    assert "src/attnbias/io.py" in plot and "src/attnbias/workflow.py" in plot
    assert not any(f.startswith("src/attnbias/experiments/") for f in plot)
    mm = closure("plotting.maxmargin")
    assert "src/attnbias/plotting/maxmargin.py" in mm and "src/attnbias/plotting/style.py" in mm


def test_unknown_target_is_an_error():
    with pytest.raises(ValueError, match="no such module"):
        closure("experiments.nosuchpaper.compute")


def test_parsing_imports_nothing():
    """The walk reads sources only: torch (and the experiment modules) are never imported."""
    import subprocess
    import sys

    code = (
        "import sys; from attnbias.closure import code_closure; "
        f"code_closure('experiments.lowrank.train_lm', {str(ROOT)!r}); "
        "assert 'torch' not in sys.modules and 'attnbias.experiments' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_closure_cache_answers_as_the_walk_and_forgets_on_any_edit(tmp_path, monkeypatch):
    """The workflow's closures, kept between processes (every Snakemake process parses the
    workflow), are the walk's for the same sources; an edited, added or removed module, or a
    broken cache file, recomputes them."""
    import shutil

    from attnbias import closure as cl

    root = tmp_path / "repo"
    shutil.copytree(SRC, root / "src" / "attnbias", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scripts", root / "scripts")
    path = tmp_path / "state" / "closures.json"
    first = cl.ClosureCache(root, path)
    code = first.code("experiments.maxmargin.study.trajectories_fig9")
    script = first.script("scripts/plot.py")
    assert code == code_closure("experiments.maxmargin.study.trajectories_fig9", root)
    assert script == script_closure("scripts/plot.py", root)
    first.save()

    def walked(*args):
        raise AssertionError("computed again")

    with monkeypatch.context() as m:  # another process, same sources: read, not computed
        m.setattr(cl, "code_closure", walked)
        m.setattr(cl, "script_closure", walked)
        again = cl.ClosureCache(root, path)
        assert again.code("experiments.maxmargin.study.trajectories_fig9") == code
        assert again.script("scripts/plot.py") == script
    for edit in (
        lambda: (root / "src/attnbias/metrics/core.py").write_text("from ..svm import qp\n"),
        lambda: (root / "src/attnbias/metrics/extra.py").write_text(""),
        lambda: (root / "scripts/plot.py").write_text("import attnbias.io\n"),
        lambda: path.write_text("{not json"),
    ):
        edit()
        for memo in (cl._tree, cl._module_imports, cl._file, cl._is_package):
            memo.cache_clear()  # (within one process the walk reads each file once)
        fresh = cl.ClosureCache(root, path)
        assert fresh.known == {}
        assert fresh.code("experiments.maxmargin.study.trajectories_fig9") == code_closure(
            "experiments.maxmargin.study.trajectories_fig9", root
        )
        fresh.save()
    assert "src/attnbias/svm/qp.py" in fresh.code("metrics.core")


def test_function_parameters_are_read_from_the_source_without_importing(tmp_path):
    """A stage function's parameters, in order, from its module's source: a def, another name
    given to one (``svm_b = svm_a = _svm``), None for a name the module does not define."""
    from attnbias.closure import function_parameters

    pkg = tmp_path / "src" / "attnbias" / "experiments"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text(
        "import torch\n"  # never imported by the read
        "def instance_a(n, T, *, seeds=(0,)):\n    pass\n"
        "def _svm(instance, tol=1e-6):\n    pass\n"
        "svm_b = svm_a = _svm\n"
    )
    read = lambda name: function_parameters(f"experiments.toy.{name}", tmp_path)  # noqa: E731
    assert read("instance_a") == ["n", "T", "seeds"]
    assert read("svm_a") == read("svm_b") == ["instance", "tol"]
    assert read("svm_c") is None and read("trajectories_a") is None
    with pytest.raises(ValueError, match="no module"):
        function_parameters("experiments.missing.instance_a", tmp_path)
    # the workflow's own: fastrates Fig 2's data stage and its shared SVM stage
    assert function_parameters("experiments.fastrates.problems.instance_fig2", ROOT) == [
        "n", "T", "d", "sigma", "seeds",
    ]  # fmt: skip
    assert function_parameters("experiments.fastrates.problems.svm_fig2", ROOT) == ["instance"]
