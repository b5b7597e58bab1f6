"""CONTRIBUTING's "Adding a figure", followed in a copy of the workflow: a throwaway synthetic
figure (lowrank ``figZ``) made by touching only the five files the recipe names builds, with its
compute, check and plot jobs, its settings taken from the schema's defaults (config.yaml is not
touched) and its caption from the plotting function's docstring (no caption file)."""

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import copy_workflow

BIN = Path(sys.executable).parent

# the recipe's files, and what this test appends to each
RECIPE = {
    "src/attnbias/experiments/lowrank/toys.py": '''

def compute_figZ(steps: int, slope: float):
    """Throwaway figure data: the line y = slope * t for t = 0 .. steps."""
    t = list(range(steps + 1))
    df = pd.DataFrame({"t": t, "y": [slope * v for v in t]})
    return df, {"columns": {"t": "step", "y": "slope times the step"}}
''',
    "workflow/schemas/lowrank.schema.yaml": """
  figZ:
    description: A throwaway figure (tests/workflow/test_add_figure.py).
    type: object
    default: {}
    additionalProperties: false
    properties:
      steps: {description: Last step., type: integer, minimum: 1, default: 4}
      slope: {description: Slope of the line., type: number, default: 2.5}
""",
    # (appended after the module's register: the entry goes last, as a line at its end would)
    "src/attnbias/table/lowrank.py": """

_register_before_figZ = register


def register(table):
    _register_before_figZ(table)
    table.register_compute("lowrank", "figZ", ["figZ"], "lowrank.toys.compute_figZ")
""",
    "src/attnbias/plotting/lowrank.py": '''

def figZ(figZ):
    """Throwaway figure: the line y = slope t, drawn from the figZ table.

    Not the caption: only the first paragraph is.
    """
    df, _ = figZ
    fig, ax = new_figure(3, 2)
    ax.plot(df.t, df.y)
    return fig
''',
    "src/attnbias/claims/lowrank.py": '''

def figZ(figZ):
    """Throwaway claim: the line rises."""
    df, _ = figZ
    ok = bool(np.all(np.diff(df.y) > 0))
    return [holds("rises", "y rises with t", ok, ok, kind="sanity")]
''',
}
SKIP = {".snakemake", "results", "__pycache__"}


def _tree(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not SKIP & set(p.relative_to(root).parts)
    }


def test_a_new_figure_takes_the_five_files_of_the_recipe(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    recipe = (wf / "CONTRIBUTING.md").read_text()
    section = recipe.split("## Adding a figure", 1)[1].split("\n## ", 1)[0]
    for name in RECIPE:  # the recipe names each file this test touches
        generic = re.sub(r"lowrank", "<paper>", name).replace("/toys.py", "/<family>.py")
        assert f"`{generic}`" in section, generic
    before = _tree(wf)
    for name, text in RECIPE.items():
        with open(wf / name, "a") as f:
            f.write(text)
    after = _tree(wf)
    assert {k for k in after if after[k] != before.get(k)} == set(RECIPE)
    assert not (wf / "workflow" / "report" / "lowrank_figZ.rst").exists()

    env = dict(
        os.environ, PYTHONPATH=str(wf / "src"), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"
    )
    cmd = [str(BIN / "snakemake"), "lowrank_figZ", "--cores", "1", "--nolock"]
    res = subprocess.run(cmd, cwd=wf, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-6000:]
    out = wf / "results"  # the outputs of its compute, check and plot jobs
    data = (out / "data" / "lowrank" / "figZ.csv").read_text().split()
    assert data[0] == "t,y" and data[-1] == "4,10"  # the schema's defaults: 4 steps, slope 2.5
    assert (out / "claims" / "lowrank" / "figZ.json").exists()
    assert (out / "figures" / "lowrank" / "figZ.pdf").exists()
    caption = (out / "figures" / "lowrank" / "figZ.rst").read_text()
    assert caption.startswith("Throwaway figure: the line y = slope t, drawn from the figZ table.")
    assert "Not the caption" not in caption
    # the tally counts the sanity claim; a passing claim's own line lives on the claims page
    assert re.search(r"\*\*Sanity checks:\*\* 1/1 passed", caption), caption
