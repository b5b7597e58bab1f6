"""fastrates negative control (``--config control=null``): SNGD and SPS (Fig 6: NGD and PS) run
plain SGD (GD) at their own grid values, SGD and AdamW are unchanged, the control is recorded in
the metadata, and the paper claims fail on control runs while the sanity claims pass (tiny sizes,
CPU)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from tiny_runs import fig6_run, image_run

from attnbias.claims import fastrates as fastrates_claims
from attnbias.experiments.fastrates import gather_dl
from attnbias.experiments.fastrates.runs import as_control_run, control_trains, optimizer_config
from attnbias.io import load_data, save_data


def _no_probe():
    raise AssertionError("the control must not run the step-size-matching probe")


def test_control_setup_is_plain_sgd_at_the_slot_grid_value():
    sgd = optimizer_config("sgd", 0.1, {"momentum": 0.0}).train_settings()
    for opt, settings in (
        ("sngd", {"match_sgd": True, "eps": 1e-8}),  # grid value = an SGD learning rate
        ("sngd", {"match_sgd": False, "eps": 1e-8}),  # η taken as the learning rate
        ("sps", {"cap": 3.0}),
    ):
        setup = optimizer_config(opt, 0.1, settings, _no_probe, control="null")
        assert setup.train_settings() == sgd, opt
        assert setup.info["control"].startswith("null")
    for opt, settings in (("sgd", {"momentum": 0.9}), ("adamw", {"clip": 1.0, "eps": 1e-6})):
        assert optimizer_config(opt, 1e-3, settings, control="null") == optimizer_config(
            opt, 1e-3, settings
        )
    assert optimizer_config("sngd", 0.1, {"match_sgd": False}).name == "sngd"
    seen = {"grad_norms": [1.0, 2.0, 4.0], "losses": [0.5, 0.8, 1.6]}
    assert optimizer_config("sps", 0.1, {"cap": 3.0}, lambda: seen).name == "sps"
    with pytest.raises(ValueError, match="control"):
        optimizer_config("sgd", 0.1, {}, control="off")


def _vit(optimizer, control, opt_settings):
    torch.set_num_threads(1)
    return image_run(
        figure="fig7", dataset="digits", image_size=8, patch_size=4, hidden=16, layers=1, heads=2,
        mlp=32, dropout=0.0, batch_size=128, epochs=1, select_at=None, n_val=100,
        opt=optimizer, lr=0.05, opt_settings=opt_settings, probe_steps=2,
        accelerator="cpu", control=control,
    )["csv"]  # fmt: skip


def test_control_sngd_and_sps_runs_are_the_sgd_run(tmp_path):
    sgd, sgd_meta = _vit("sgd", "null", {"momentum": 0.0})
    assert sgd_meta["control"] == "null" and sgd_meta["engine_optimizer"] == "sgd"
    cols = ["step", "train_loss", "test_loss", "val_loss"]
    for opt, settings in (("sngd", {"match_sgd": True}), ("sps", {"cap": 3.0})):
        df, meta = _vit(opt, "null", settings)
        assert (df.optimizer == opt).all()  # the label is kept
        assert (meta["optimizer"], meta["engine_optimizer"]) == (opt, "sgd")
        assert meta["control"] == "null"
        assert meta["step_size_matching"]["control"].startswith("null")
        pd.testing.assert_frame_equal(df[cols], sgd[cols])  # the same run as SGD's
    df, meta = _vit("sngd", "none", {"match_sgd": True})
    assert meta["control"] == "none" and meta["engine_optimizer"] == "sngd"
    assert not np.allclose(df.train_loss.iloc[1:], sgd.train_loss.iloc[1:])
    # the gather refuses runs of the other control and records its own
    p = tmp_path / "sgd.csv"
    save_data(sgd, sgd_meta, p, preset="quick")
    with pytest.raises(ValueError, match="control"):
        gather_dl("fig7", [str(p)], "quick")
    assert gather_dl("fig7", [str(p)], "quick", control="null")[1]["control"] == "null"
    with pytest.raises(ValueError, match="control"):
        _vit("sgd", "off", {})


def test_control_runs_are_the_default_runs_relabelled(tmp_path):
    """What lets the workflow train each run once: a run under the control trains as an
    uncontrolled run (``control_trains``), and that run's files, relabelled, are the control
    run's files but for its ``train_seconds``."""
    block = {"settings": "fig7 block", "figure": "fig7", "lr": 0.05}
    sgd = dict(block, opt="sgd", opt_settings={"momentum": 0.0})
    for opt, settings in (("sngd", {"match_sgd": True, "eps": 1e-8}), ("sps", {"cap": 3.0})):
        run = dict(block, opt=opt, opt_settings=settings, control="null")
        assert control_trains(run) == sgd, opt
        assert control_trains(dict(run, control="none"))["opt"] == opt
    adamw = dict(block, opt="adamw", opt_settings={"eps": 1e-8, "clip": 1.0})
    assert control_trains(dict(adamw, control="null")) == adamw
    heavy = dict(block, opt="sgd", opt_settings={"momentum": 0.9})
    assert control_trains(dict(heavy, control="null")) == heavy  # not the momentum-free SGD

    default = _vit("sgd", "none", {"momentum": 0.0})
    save_data(*default, tmp_path / "sgd.csv", preset="quick")  # the shared run's files
    for opt, settings in (("sgd", {"momentum": 0.0}), ("sngd", {"match_sgd": True})):
        direct = _vit(opt, "null", settings)
        run = dict(block, opt=opt, opt_settings=settings, control="null")
        df, meta = as_control_run({"csv": load_data(tmp_path / "sgd.csv")}, run)["csv"]
        save_data(df, meta, tmp_path / f"{opt}_relabelled.csv", preset="quick")
        save_data(*direct, tmp_path / f"{opt}_direct.csv", preset="quick")
        files = [tmp_path / f"{opt}_{how}.csv" for how in ("relabelled", "direct")]
        assert files[0].read_bytes() == files[1].read_bytes(), opt
        metas = [json.loads(f.with_suffix(".json").read_text()) for f in files]
        assert {k for k in metas[1] if metas[0][k] != metas[1][k]} <= {"train_seconds",
                                                                       "provenance"}, opt
    # a run trained with another optimiser is not relabelled as this one
    adamw_run = _vit("adamw", "none", {"eps": 1e-8})
    with pytest.raises(ValueError, match="engine_optimizer"):
        as_control_run({"csv": adamw_run}, dict(block, opt="sngd", opt_settings={}, control="null"))


FIG6 = dict(
    dataset="digits", patch=2, embed_dim=32, lr=[0.1, 0.3, 1.0, 3.0], steps=1000, pos_scale=1.0,
    polyak_cap=100.0,
)  # fmt: skip  (the quick preset)


def test_fig6_control_is_gd_and_its_paper_claims_fail():
    df, meta = fig6_run(**FIG6, control="null")
    assert meta["control"] == "null" and set(meta["engine_methods"].values()) == {"gd"}
    gd, ngd = (df[df.method == m].reset_index(drop=True) for m in ("gd", "ngd"))
    pd.testing.assert_frame_equal(gd.drop(columns="method"), ngd.drop(columns="method"))
    assert meta["selection"]["gd"]["chosen"] == meta["selection"]["ngd"]["chosen"]
    claims = {c.id: c for c in fastrates_claims.fig6((df, meta))}
    paper = {k: c for k, c in claims.items() if c.kind == "paper"}
    assert set(paper) == {"auc_ngd", "final_ngd", "auc_polyak", "final_polyak"}
    assert not any(c.passed for c in paper.values()), paper
    assert all(c.passed for c in claims.values() if c.kind == "sanity"), claims
    # PS under the control is GD at step size 1, a value of GD's own grid: never better than GD
    assert claims["auc_polyak"].value >= 0.0 and claims["auc_ngd"].value == 0.0


def test_fig6_default_grid_claims_pass():
    df, meta = fig6_run(**FIG6)
    claims = {c.id: c for c in fastrates_claims.fig6((df, meta))}
    assert all(c.passed for c in claims.values()), claims
    assert meta["control"] == "none" and "lr_interior" in claims
    assert df.groupby("method").selected.sum().to_dict() == {
        "gd": df[(df.method == "gd")].t.nunique(),
        "ngd": df[(df.method == "ngd")].t.nunique(),
        "polyak": df[(df.method == "polyak")].t.nunique(),
    }  # one selected run per method


def test_sps_c_is_matched_so_its_first_polyak_step_is_sgds_rate():
    """SPS's grid value is an SGD rate lr: c = median ℓ_B/(lr ‖g_B‖²) over the probe, so the Polyak
    step ℓ_B/(c ‖g_B‖²) at the probe's median ratio is lr; a grid of rates a factor 3 apart is a
    grid of c a factor 3 apart; the cap γ_b is the fixed ``cap``, never the grid value."""
    seen = {"grad_norms": [1.0, 2.0, 0.5], "losses": [0.5, 0.8, 0.1]}  # ratios 0.5, 0.2, 0.4
    cs = []
    for lr in (0.03, 0.1, 0.3):
        setup = optimizer_config("sps", lr, {"cap": 3.0}, lambda: seen)
        assert setup.lr == 3.0 and setup.extra["f_star"] == 0.0
        c = setup.extra["c"]
        assert c == pytest.approx(0.4 / lr)
        assert 0.4 / c == pytest.approx(lr)  # the Polyak step at the median ratio
        assert setup.info["matched_to_sgd_lr"] == lr and setup.info["c"] == c
        assert setup.info["probe_median_polyak_ratio"] == pytest.approx(0.4)
        cs.append(c)
    assert cs[0] / cs[1] == pytest.approx(10 / 3) and cs[1] / cs[2] == pytest.approx(3)
