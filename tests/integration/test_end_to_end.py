"""Tiny end-to-end run of the workflow in a temporary copy, with claims_strict=true, and the
report.

Why this file takes minutes: its set-up is one whole run of the workflow at the CI sizes
(tests/config/ci*.yaml: about 170 jobs, every synthetic figure and every deep-learning figure at
the smallest size that still exercises each rule kind: train, extend, gather, compute, check,
plot), made once per session (``conftest.quick_run``) and read by every test here and by
tests/integration/test_resume.py; the negative control then reruns, on a copy, the jobs the
control changes.  docs/performance.md ("The test suite") has the measured times."""

import json
import re
import zipfile

import pytest
from conftest import ci_configfiles, job_outputs, set_reference, snakemake_cmd

from attnbias.claims.core import failed_regime, failed_sanity


@pytest.fixture
def run_dir(quick_run):
    """The session's end-to-end run (:func:`conftest.quick_run`), shared with test_resume."""
    return quick_run


# Honest claims whose verdict at CI size is not reproducible: recorded in the summary and the
# caption rather than asserted either way (workflow/report/<paper>_<fig>.rst).
# - lowrank Fig 4: the LM proxies' KQ balance rises by 0.002 over the quick preset's 3 seeds but
#   falls by 0.008 on seed 0 alone.
# The maxmargin ViT (Figs 6-7) trains at a tenth of the quick preset's updates in CI
# (tests/config/ci_maxmargin.yaml): its late phase starts before the fit, so the regime check
# late_after_fit fails and those figures' paper claims are void here (asserted below); their
# verdicts are measured at the quick preset (docs/papers/maxmargin.md).
FRAGILE = {
    ("lowrank", "fig4", "lm_kq_balance_grows"),
}
# regime checks that fail by design at the CI sizes (their figures' paper claims are then void)
CI_OUT_OF_REGIME = {
    ("maxmargin", "fig6", "late_after_fit"), ("maxmargin", "fig7", "late_after_fit"),
}  # fmt: skip


# The fastrates deep-learning figures (Figs 1, 4, 7) compare short stochastic runs: their verdicts
# change with the draw, and another CPU's float order is another draw (on the CI machine of
# 2026-11-27 three single-seed verdicts differed from this machine's).  CI trains them on seed 0 at
# a quarter of the quick preset's length (tests/config/ci_fastrates.yaml), so their paper claims
# and sanity checks are recorded in the summary and the captions, not asserted here; that their
# void accounting is right is asserted, and so is the negative control's failure of every paper
# claim.  The quick preset's own verdicts (Figs 1, 4 and 7 valid on each of the five draws of
# 2026-11-28, seeds 0-2 per draw) are in docs/controls.md.
# Known honest failures of the quick preset, over seeds 0-2:
# - the lowrank ViT's PV rank@10⁻² drop (seed mean 0.48 at 15 epochs, 1 of 3 seeds, against the
#   stated halving);
# - lowrank Fig 2's PV effective-rank halving: every seed passes on its own, but seed 1's λ = 3 run
#   did not learn the task, so on the seed mean the largest solved λ is 2 (ratio 0.52).
STOCHASTIC = {("fastrates", "fig1"), ("fastrates", "fig4"), ("fastrates", "fig7")}
KNOWN_QUICK = {
    ("lowrank", "fig3", "vit_pv_rank_1e2_drop"),
    ("lowrank", "fig2", "pv_effrank_halved"),
}


def _unasserted(paper: str, figure: str, claim: dict) -> bool:
    """A verdict recorded but not asserted: fragile, a known honest failure, or a claim of the
    stochastic stand-ins."""
    return (paper, figure, claim["id"]) in FRAGILE | KNOWN_QUICK or (paper, figure) in STOCHASTIC


def test_every_claim_passes(run_dir):
    files = sorted((run_dir / "results" / "claims").glob("*/*.json"))
    assert len(files) >= 14
    failed = []
    over_seeds = set()
    for f in files:
        doc = json.loads(f.read_text())
        assert set(doc) == {"paper", "figure", "preset", "control", "claims"}
        assert doc["preset"] == "quick" and doc["control"] == "none"
        for c in doc["claims"]:
            # every claim has its verdict and the reason for it; a claim judged over several seeds
            # also records each seed, the rule that combined them and its outcome
            # (docs/outputs.md#claims-over-seeds); all three or none
            base = {"id", "kind", "statement", "value", "threshold", "passed", "verdict", "reason"}
            keys = set(c) - {"positive_control", "part"}  # its control, its part of the figure
            assert keys in (base, base | {"seeds", "rule", "outcome"}), set(c) ^ base
            assert c["verdict"] in ("passed", "failed", "inconclusive", "void") and c["reason"]
            if "seeds" in c:
                assert len(c["seeds"]) >= 2 and c["rule"], c
                over_seeds.add((doc["paper"], doc["figure"]))
                # no claim whose seeds disagree in outcome counts as a pass
                if len({r["passed"] for r in c["seeds"].values()}) > 1:
                    assert c["verdict"] != "passed", c
            assert c["kind"] in ("paper", "control", "regime", "sanity", "identity")
            # over the CI size's three short seeds an effect may stay unresolved (inconclusive:
            # the seeds disagree); it must never be resolved against the paper (failed)
            if c["verdict"] == "inconclusive":
                assert "seeds" in c and c["reason"].startswith("inconclusive: "), c
                continue
            # regime checks and positive controls are recorded, not asserted: the CI sizes are
            # below the regime of the deep-learning figures by design, and their paper claims are
            # then void (counted in test_figures_and_data_exist), never failed
            if (doc["paper"], doc["figure"], c["id"]) in CI_OUT_OF_REGIME:
                assert not c["passed"], f"{c['id']} passes at the CI size: update the comment above"
            if c["kind"] in ("regime", "control") or c["verdict"] == "void":
                continue
            if not c["passed"] and not _unasserted(doc["paper"], doc["figure"], c):
                failed.append((doc["paper"], doc["figure"], c["id"], c["value"]))
    assert not failed, failed
    # the CI configuration's figures of several seeds (tests/config/ci_*.yaml): lowrank's GPT-2
    # proxies (Fig 3 left, App. C; two seeds) and the balance of the GPT-2 proxies (Fig 4, judged
    # per seed since 2026-12-01); Fig 3's ViTs (right) and Fig B's recall proxies have one seed
    assert {("lowrank", "fig3"), ("lowrank", "figC")} <= over_seeds <= {
        ("lowrank", "fig3"), ("lowrank", "figC"), ("lowrank", "fig4"), ("lowrank", "figB")
    }, over_seeds  # fmt: skip


# The deep-learning figures: each has a negative control (`--config control=null`, README
# "Negative controls") under which its paper claims must fail and its sanity checks pass.
CONTROLLED = {
    ("maxmargin", "fig6"), ("maxmargin", "fig7"),
    ("fastrates", "fig1"), ("fastrates", "fig4"), ("fastrates", "fig6"), ("fastrates", "fig7"),
    ("lowrank", "fig2"), ("lowrank", "fig3"), ("lowrank", "figC"), ("lowrank", "table1"),
    ("lowrank", "fig4"), ("lowrank", "figB"),
}  # fmt: skip


# Honest exceptions under the control, explained in the captions: the frozen-W_q,W_k ViT (uniform
# attention in every layer) reaches 0.44 held-out accuracy on seed 0, under the 0.5 the sanity
# check asks of a trained model (0.83 on seed 1).
# fastrates' SNGD and SPS slots are SGD's runs under the control (SGD's grid), so their sanity
# checks are the default run's, recorded (STOCHASTIC) rather than asserted.
CONTROL_KNOWN = {("maxmargin", "fig6", "probe_acc"), ("maxmargin", "fig7", "probe_acc")}


# The control's runs that no run of the default run trains as: the ViT with frozen W_q, W_k, one
# per seed (every fastrates run is the default run's SGD or AdamW run, relabelled).
CONTROL_TRAINS = {("maxmargin_vit_train", "seed0")}  # the CI configuration trains seed 0


def test_negative_control_fails_every_deep_learning_paper_claim(run_dir, tmp_path):
    """`--config control=null` on a copy of the finished run: only the deep-learning jobs rerun
    (the switch reaches them through params), every one of those figures records the control, each
    of its paper claims FAILS and each sanity check passes, figure by figure; the strict gate
    (which reverses the paper-claim expectation under the control) accepts the run.  The control
    has its own folder, results/control-null/, with the controlled figures only: the default run's
    files are untouched, and the runs the control does not change are read from them (relabelled),
    not trained again."""
    import shutil

    d = tmp_path / "control"
    shutil.copytree(run_dir, d, symlinks=True)
    default = {p: p.stat().st_mtime_ns for p in (d / "results").rglob("*") if p.is_file()}
    res = snakemake_cmd(
        "--cores", "2", "all", "--configfile", *ci_configfiles(d),
        "--config", "control=null", "claims_strict=false", cwd=d, timeout=3000,
    )  # fmt: skip
    log = res.stdout + res.stderr
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
    computed = set(job_outputs(res.stdout, "compute"))
    assert computed <= {
        "results/control-null/data/fastrates/fig6.csv",
        "results/control-null/data/lowrank/fig4.csv", "results/control-null/data/lowrank/figB.csv",
    }, computed  # synthetic computations are not controlled and do not rerun
    controlled, problems, unasserted = set(), [], []
    for f in sorted((d / "results" / "control-null" / "claims").glob("*/*.json")):
        doc = json.loads(f.read_text())
        key = (doc["paper"], doc["figure"])
        if doc["control"] == "none":
            continue
        controlled.add(key)
        paper = [c for c in doc["claims"] if c["kind"] == "paper"]
        assert paper, f"{key}: no paper claim to test under the control"
        problems += [(*key, c["id"], "passes under the control") for c in paper
                     if c["verdict"] == "passed"]  # fmt: skip
        failed_sanity = [(*key, c["id"], "sanity fails") for c in doc["claims"]
                         if c["kind"] == "sanity" and not c["passed"]]  # fmt: skip
        # the stochastic stand-ins' sanity verdicts are recorded, not asserted (STOCHASTIC), and
        # so is every regime check at the CI sizes (the strict gate reports them)
        (unasserted if key in STOCHASTIC else problems).extend(failed_sanity)
        unasserted += [(*key, c["id"], "regime fails") for c in doc["claims"]
                       if c["kind"] == "regime" and not c["passed"]]  # fmt: skip
    assert controlled == CONTROLLED, controlled ^ CONTROLLED
    assert {p[:3] for p in problems} <= CONTROL_KNOWN, problems
    # a run the control does not change is the default run's, relabelled (Table.register_sweep's
    # control_shares); the control trains only the others.  The runs of a grid widened at an edge
    # (`extend` jobs, fastrates) are shared too.
    trained, relabelled = set(), set()
    logs = d / "results" / "control-null" / "logs"
    for f in [*logs.glob("train/*/*/*.log"), *logs.glob("extend/*/*/*.log")]:
        text, sweep = f.read_text(), f"{f.parts[-3]}_{f.parts[-2]}_train"  # logs/<rule>/<p>/<s>/
        trained |= {(sweep, r) for r in re.findall(r"run (\S+): training", text)}
        relabelled |= {(sweep, r) for r in re.findall(r"run (\S+): the uncontrolled", text)}
    assert trained == CONTROL_TRAINS, trained ^ CONTROL_TRAINS
    runs = {(f"{f.parts[-4]}_{f.parts[-3]}_train", f.stem)  # (the ViT's one run writes 3 files)
            for f in (d / "results" / "control-null" / "data").glob("[fl]*/*/*/*.csv")}  # fmt: skip
    assert relabelled == runs - CONTROL_TRAINS and len(relabelled) > 3 * len(trained)
    # the strict gate enforces the same expectation on every figure, the stochastic stand-ins'
    # sanity checks included (and reports the known exceptions)
    gate = snakemake_cmd(
        "--cores", "1", "all", "--configfile", *ci_configfiles(d),
        "--config", "control=null", "claims_strict=true", cwd=d,
    )  # fmt: skip
    assert (gate.returncode == 0) == (not (problems + unasserted)), gate.stderr[-3000:]
    gate_log = (d / "results/control-null/logs/claims_gate.log").read_text()
    for paper, figure, claim, _ in problems + unasserted:
        assert f"{paper} {figure} {claim}" in gate_log, (claim, gate_log[-3000:])
    assert {p: p.stat().st_mtime_ns for p in default} == default
    summary = (d / "results/control-null/claims/summary.md").read_text()
    assert "NEGATIVE CONTROL RUN" in summary, log[-2000:]


def test_figures_and_data_exist(run_dir):
    for (
        fig
    ) in "fig1a fig1b fig1c fig2 fig3a fig3b fig3c fig4a fig4b fig5 fig8 fig9a fig9b fig10".split():
        for ext in ("pdf", "png"):
            assert (
                run_dir / "results" / "figures" / "maxmargin" / f"{fig}.{ext}"
            ).stat().st_size > 1000
    summary = (run_dir / "results" / "claims" / "summary.md").read_text()
    m = re.search(r"Paper claims: (\d+)/(\d+) passed, (\d+) failed, (\d+) inconclusive, "
                  r"(\d+) void", summary)
    assert m and int(m[2]) - int(m[1]) == int(m[3]) + int(m[4]) + int(m[5]), m and m[0]
    # void: exactly the paper claims that a failed sanity or regime check of their figure bears on
    # (its part's, or one of no part: core.applies; the sanity failures all stochastic), and
    # those whose positive control fails too (core.void_causes)
    docs = [json.loads(f.read_text()) for f in (run_dir / "results" / "claims").glob("*/*.json")]
    # a failed sanity check only in the stochastic stand-ins (a regime check may fail anywhere at
    # the CI sizes: the paper claims it bears on are then void)
    insane = [d for d in docs if any(c["kind"] == "sanity" and not c["passed"]
                                     for c in d["claims"])]  # fmt: skip
    assert {(d["paper"], d["figure"]) for d in insane} <= STOCHASTIC
    void = unasserted = 0
    for d in docs:
        for c in (c for c in d["claims"] if c["kind"] == "paper"):
            blocked = failed_sanity(d["claims"], c) + failed_regime(d["claims"], c)
            assert not blocked or c["verdict"] == "void", (d["figure"], c["id"], blocked)
            void += c["verdict"] == "void"
            unasserted += c["verdict"] == "failed" and _unasserted(d["paper"], d["figure"], c)
    assert int(m[5]) == void, (m[0], void)
    assert int(m[3]) == unasserted, (m[0], unasserted)
    # lowrank Fig 3's two halves are judged apart: its ViT half's failed regime check
    # (rank_settled_vit at the CI size) leaves the LM half's claims judged
    fig3 = next(d for d in docs if (d["paper"], d["figure"]) == ("lowrank", "fig3"))
    assert {c.get("part") for c in fig3["claims"]} == {"lm", "vit"}
    inconclusive = sum(c["verdict"] == "inconclusive" for d in docs for c in d["claims"])
    assert int(m[4]) == inconclusive, (m[0], inconclusive)
    m = re.search(r"Sanity checks: (\d+)/(\d+) passed, (\d+) failed", summary)
    failed = sum(c["kind"] == "sanity" and not c["passed"] for d in docs for c in d["claims"])
    assert m and int(m[3]) == failed, m and m[0]
    meta = json.loads((run_dir / "results" / "data" / "maxmargin" / "fig9.json").read_text())
    assert meta["trials"] == 300 and "columns" in meta and meta["provenance"]["preset"] == "quick"


def test_strict_gate_and_rerun_is_noop(run_dir):
    cfgs = ci_configfiles(run_dir)
    res = snakemake_cmd(
        "-n",
        "--cores",
        "1",
        "all",
        "--configfile",
        *cfgs,
        "--config",
        "claims_strict=true",
        cwd=run_dir,
    )
    assert res.returncode == 0
    assert not job_outputs(res.stdout, "compute")  # nothing recomputes


def test_changed_setting_reruns_only_its_computation(run_dir):
    """Settings reach scripts through params:, so Snakemake reruns exactly what changed in the
    reference run's config.yaml (here the copy's: the CI settings, conftest.set_reference)."""
    try:
        set_reference(run_dir, *ci_configfiles(), {"maxmargin": {"fig4": {"lr_gd": 0.5}}})
        res = snakemake_cmd("-n", "--cores", "1", "all", cwd=run_dir)
    finally:
        set_reference(run_dir, *ci_configfiles())
    assert res.returncode == 0, res.stderr[-3000:]
    assert job_outputs(res.stdout, "compute") == ["results/data/maxmargin/fig4.csv"]
    assert "params" in res.stdout.lower()


def test_report_zip(run_dir):
    cfgs = ci_configfiles(run_dir)
    res = snakemake_cmd(
        "--cores",
        "1",
        "cpu_figures",
        "checks",
        "--configfile",
        *cfgs,
        "--config",
        "claims_strict=true",
        "--report",
        "report.zip",
        cwd=run_dir,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    with zipfile.ZipFile(run_dir / "report.zip") as z:
        names = z.namelist()
    assert any(n.endswith("fig1a.png") for n in names)
    assert any(n.endswith("report.html") for n in names)


BAD_FIG4 = {"steps": 200, "lr_ngd": 0.001, "lr_gd": 1.0}


def test_failed_claim_is_reported_and_strict_fails(run_dir, tmp_path):
    """Break a claim on purpose (GD with a tiny step cannot saturate): the summary shows it, and
    claims_strict makes the run fail while keeping the summary.  The broken setting is put in the
    reference run's config.yaml of a copy of the finished run (as an override it would be a run of
    its own, every figure of it made anew for its summary)."""
    import shutil

    shutil.copytree(run_dir, tmp_path / "broken", symlinks=True)
    run_dir = tmp_path / "broken"
    set_reference(run_dir, *ci_configfiles(), {"maxmargin": {"fig4": BAD_FIG4}})
    bad = run_dir / "bad.yaml"  # the same settings given again: no override
    bad.write_text(f"maxmargin:\n  fig4: {BAD_FIG4}\n")
    cfgs = ci_configfiles(run_dir)
    res = snakemake_cmd(
        "--cores",
        "2",
        "maxmargin_fig4a",
        "checks",
        "--configfile",
        *cfgs,
        bad,
        "--config",
        "claims_strict=false",
        cwd=run_dir,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    summary = (run_dir / "results" / "claims" / "summary.md").read_text()
    assert "FAIL" in summary and "ngd_prob_t50" in summary
    res = snakemake_cmd(
        "--cores",
        "1",
        "all",
        "--configfile",
        *cfgs,
        bad,
        "--config",
        "claims_strict=true",
        cwd=run_dir,
    )
    assert res.returncode != 0
    assert "claims_strict" in (res.stdout + res.stderr)
    assert (run_dir / "results" / "claims" / "summary.csv").exists()


def test_cosmetic_edit_retrains_nothing_and_a_setting_does(run_dir):
    """Code tracking is narrow: editing plotting or the shared analysis re-plots but makes no
    training job out of date (``attnbias.io``, which writes every job's table and which the
    trainings import, is part of their code: an edit there reruns them); changing a training
    setting reruns exactly its jobs."""
    import os

    cfgs = ci_configfiles(run_dir)
    edited = [
        run_dir / "src/attnbias/plotting/lowrank.py",
        run_dir / "src/attnbias/analysis/lowrank.py",
    ]
    saved = [(p, p.read_text(), p.stat()) for p in edited]
    try:
        for p in edited:
            p.write_text(p.read_text() + "\n# a cosmetic edit\n")
        res = snakemake_cmd("-n", "--cores", "1", "all", "--configfile", *cfgs, cwd=run_dir)
        assert res.returncode == 0, res.stderr[-3000:]
        plots = job_outputs(res.stdout, "plot")
        # the edit was seen: re-plot
        replot = {"results/figures/lowrank/fig2.pdf", "results/figures/lowrank/table1.pdf"}
        assert replot <= set(plots)
        # no training: no job of rule `train` (every training batch, both presets)
        jobs = set(re.findall(r"^(?:local)?rule (\w+):", res.stdout, re.M))
        assert "train" not in jobs, jobs
    finally:
        for p, text, st in saved:
            p.write_text(text)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))

    try:  # a training setting changed in the reference run's config.yaml
        set_reference(run_dir, *ci_configfiles(), {"lowrank": {"fig2": {"lr": 0.002}}})
        res = snakemake_cmd("-n", "--cores", "1", "all", "--configfile", *cfgs, cwd=run_dir)
    finally:
        set_reference(run_dir, *ci_configfiles())
    assert res.returncode == 0, res.stderr[-3000:]
    runs = job_outputs(res.stdout, "train")
    assert runs and all(r.startswith("results/data/lowrank/fig2/") for r in runs), runs
    assert "params" in res.stdout.lower()
    assert "results/data/maxmargin/fig1.csv" not in job_outputs(res.stdout, "compute")
