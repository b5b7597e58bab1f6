"""Claim checks of Tarzanagh et al. 2023, Figs 6-7: a ViT's last-layer [CLS] attention sparsifies
(soft-sparsity ζ falls) while ‖W_qᵀW_k‖_F grows, evaluated on the plot-ready training table.

The trends are asserted in the **late phase**, over the epochs ≥ half the run: from the untrained
model (epoch 0) any training run moves ζ and ‖W‖ (attention leaves the near-uniform start, the
weights leave their initial scale), so a trend "from epoch 0" says nothing about the max-margin
picture, which concerns the continued growth of ‖W‖ in a converging direction and the
sparsification that goes with it.  The whole-run numbers are kept in the statements as
information.  Thresholds (fixed before measuring; see the captions of Figs 6 and 7):

- ``zeta_late_trend``: Spearman ρ(epoch, ζ / ζ₀) over the late epochs < −0.8 (paper preset, the
  first design's whole-run value) or < −0.5 (quick: the sign alone passes by chance; |ρ| ≥ 0.5 is a
  monotone trend beyond noise, one-sided p ≈ 0.05 at 12 late epochs and smaller with more).  ζ₀ is
  the same probe's ζ with the last layer's W_q, W_k (and biases) put back to their initial values,
  everything else as trained, so ζ / ζ₀ is the sparsification the learned key-query weights make
  (with the near-uniform initial W_q, W_k, ζ₀ stays at about the number of patches and the ranks
  are those of ζ; ρ(epoch, ζ) itself is reported as information).  Under the negative control
  (W_q, W_k frozen) ζ / ζ₀ ≡ 1 and ρ = 0, whereas ρ(epoch, ζ) of a flat, float-noise ζ would pass
  or fail by chance; tables without ζ₀ fall back to ζ;
- ``wnorm_late_trend``: Spearman ρ(epoch, ‖W‖_F) over the late epochs > 0.8 / > 0.5 likewise;
- ``zeta_late_drop``: ζ(last) / ζ(midpoint) ≤ 0.9 — ζ still falls by at least 10 % over the
  second half (project choice: the first design had no late-phase size);
- ``zeta_qk_share``: the share of the late-phase fall of log ζ that the last layer's *learned*
  W_q, W_k produce, [A(last) − A(mid)] / [log ζ(last) − log ζ(mid)] with A = log(ζ / ζ₀) and ζ₀
  the same probe's ζ with that layer's W_q, W_k (and biases) put back to their initial values,
  everything else as trained: ≥ 0.5 (the key-query weights, not the token representations, make
  at least half of the late sparsification; NaN, a failure, when ζ does not fall);
- sanity: every logged ζ and ‖W‖_F is finite, and the final probe (held-out) accuracy is ≥ 0.5,
  five times chance on ten classes (both presets; the training accuracy is information).
- regime ``late_after_fit`` (both figures, both presets): the late phase starts after the fit, the
  mean training-batch accuracy over its first epoch (Fig 7: the first logged epoch ≥ half the run;
  Fig 6: the first drawn one) ≥ 0.99 on every seed.  The max-margin picture concerns the training
  that continues once the data are fit (the loss can then fall only by growing ‖W‖ in a
  converging direction); before the fit ζ and ‖W‖ move for any reason, so a late phase that
  starts mid-fit measures the fit, not the mechanism, and its paper claims are void.  0.99, not 1:
  the accuracy is the mean over the epoch's minibatches of a model that still moves (and, in the
  paper preset, of augmented images), so one miss in a hundred is the tolerance of "fit"; the
  first epoch that reached it and the lowest accuracy over the late phase are information.
- ``maps_late_concentrate`` (Fig 6): the mean peak (largest patch) weight of the **drawn maps** at
  the last drawn epoch / at the first drawn epoch ≥ the midpoint ≥ 1.1 (the maps still
  concentrate, by ≥ 10 %): measured on the very maps the figure draws (the fixed images, the end
  of the drawn epochs), so that what is drawn is what is claimed; the same ratio over the whole
  probe set and the epoch's weight snapshots (meta ``probe_peak``, Fig 7's probe) is information.
  Sanity ``probe_acc``: the run the maps come from learned (final held-out accuracy ≥ 0.5).

**Seeds** (docs/outputs.md#claims-over-seeds).  A table of several seeds (column ``seed``, the
gather :func:`attnbias.experiments.maxmargin.vit_gather.gather_vit`) is judged by
:func:`~attnbias.claims.core.over_seeds`: each claim measured on each seed's rows, the paper claims
also on the seed mean (Fig 7: the curves averaged over the seeds epoch by epoch; Fig 6: the peak
of every seed's drawn maps, averaged over the images and seeds); a sanity or regime check must
hold on every seed; a paper claim is resolved by the sign test (every one of 3 seeds and the seed
mean agree, else inconclusive).  A failed sanity or regime check voids the figure's paper claims
(:func:`~attnbias.claims.core.verdicts`).  A table of one seed is judged as it is.

Re-exported by :mod:`attnbias.claims.maxmargin` (one function per figure: ``fig6``, ``fig7``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics import spearman
from .core import Claim, compare, holds, judged_over_seeds

LATE_RHO = {"paper": 0.8, "quick": 0.5}  # |Spearman ρ| over the late epochs
LATE_ZETA_RATIO = 0.9  # ζ(last) / ζ(midpoint) at most this
LATE_PEAK_RATIO = 1.1  # peak(last drawn) / peak(first drawn ≥ midpoint) at least this
QK_SHARE = 0.5  # share of the late fall of log ζ produced by the last layer's learned W_q, W_k
PROBE_ACC = 0.5  # sanity: final held-out accuracy (ten classes: chance 0.1)
FIT_ACC = 0.99  # regime: training accuracy at the first epoch of the late phase at least this


def late_start(epochs) -> float:
    """The first epoch of the late phase: half the run, last / 2 (the run starts at epoch 0, the
    untrained model, whichever epochs were logged or drawn: the paper preset draws maps at
    {1, 10, 50, 100, 200, 400}, whose late phase starts at 200)."""
    return float(np.max(np.asarray(epochs, dtype=float))) / 2.0


def late_after_fit(epochs, train_acc, start) -> Claim:
    """Regime ``late_after_fit``: the training accuracy of the epoch ``start`` (the first epoch of
    the late phase) is ≥ :data:`FIT_ACC` (module docstring).  ``epochs``, ``train_acc``: the
    run's accuracy per epoch (NaN at epoch 0); a table without it, or without a late phase,
    fails (NaN)."""
    ep = np.asarray(epochs, dtype=float)
    acc = np.asarray(train_acc, dtype=float)
    at = acc[ep == start] if start is not None else np.array([])
    value = float(at[0]) if at.size else float("nan")
    fit = ep[np.nan_to_num(acc, nan=-1.0) >= FIT_ACC]
    late = acc[ep >= start] if start is not None else np.array([])
    info = (f"the first epoch of the table at ≥ {FIT_ACC:g}: {int(fit[0])}" if fit.size
            else f"never ≥ {FIT_ACC:g} in the table")  # fmt: skip
    if np.isfinite(late).any():
        info += f"; lowest over its late epochs {np.nanmin(late):.3f}"
    start_txt = f"epoch {int(start)}" if start is not None else "none"
    return compare(
        "late_after_fit",
        f"regime: the late phase starts after the fit, mean training-batch accuracy over its "
        f"first epoch ({start_txt}) ({info})",
        value,
        ">=",
        FIT_ACC,
        kind="regime",
    )


def _seeds(df: pd.DataFrame) -> list[int]:
    return sorted(int(s) for s in df["seed"].unique()) if "seed" in df.columns else []


def _seed_meta(meta: dict, seed: int) -> dict:
    """The gathered meta as one seed's run recorded it (its ``runs_by_seed`` entry)."""
    return dict(meta, **(meta.get("runs_by_seed") or {}).get(str(seed), {}))


def _mean_meta(meta: dict) -> dict:
    """The gathered meta for the seed-mean data: the runs' probe-set peaks (per epoch) and final
    probe accuracies averaged over the seeds."""
    runs = list((meta.get("runs_by_seed") or {}).values())
    out = dict(meta)
    if runs and all("probe_peak" in r for r in runs):
        epochs = set.intersection(*(set(r["probe_peak"]) for r in runs))
        out["probe_peak"] = {e: float(np.mean([r["probe_peak"][e] for r in runs])) for e in epochs}
    if runs and all("final_probe_acc" in r for r in runs):
        out["final_probe_acc"] = float(np.mean([r["final_probe_acc"] for r in runs]))
    return out


def seed_mean_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Fig 7's curves averaged over the seeds, epoch by epoch (every seed logs every epoch)."""
    if "seed" not in df.columns:
        return df
    cols = [c for c in df.columns if c not in ("epoch", "seed")]
    return df.groupby("epoch", as_index=False, sort=True)[cols].mean()


def drawn_peaks(df: pd.DataFrame) -> pd.Series:
    """Fig 6: per drawn epoch, the mean over the drawn maps (images, and seeds where the table has
    several) of each map's peak (largest) patch weight."""
    keys = ["seed", "epoch", "image"] if "seed" in df.columns else ["epoch", "image"]
    return df.groupby(keys).weight.max().groupby("epoch").mean()


def fig6(fig6) -> list[Claim]:
    """Fig 6: the late concentration of the drawn maps, judged over the seeds (module
    docstring).  ``fig6``: the ``fig6`` group's ``(DataFrame, meta)``."""
    df, meta = fig6
    return judged_over_seeds(_fig6_claims, df, meta, _seed_meta, lambda d, m: (d, _mean_meta(m)))


def _fig6_claims(df: pd.DataFrame, meta: dict) -> list[Claim]:
    """Fig 6's claims on the drawn maps of ``df`` (one seed's, or every seed's pooled)."""
    seeds = _seeds(df)
    peak = drawn_peaks(df)
    last = peak.index.max()
    late = [e for e in peak.index if e >= late_start(peak.index)]
    mid = min(late) if late else None
    measurable = mid is not None and mid != last
    ratio = float(peak[last] / peak[mid]) if measurable else float("nan")
    per_epoch = ", ".join(f"{e}: {p:.3f}" for e, p in peak.items())
    mid_txt = mid if measurable else "none: no such epoch"
    n_img = df["image"].nunique()
    maps = (
        f"{n_img} images × {len(seeds)} seeds, the mean over seeds {', '.join(map(str, seeds))}"
        if len(seeds) > 1
        else f"{n_img} images" + (f", seed {seeds[0]}" if seeds else "")
    )
    probe = {float(e): float(p) for e, p in (meta.get("probe_peak") or {}).items()}
    info = ""
    if measurable and {float(mid), float(last)} <= set(probe):
        info = (
            f"; information: over the whole probe set and the epoch's weight snapshots the ratio "
            f"is {probe[float(last)] / probe[float(mid)]:.3f}"
        )
    acc = (
        df.groupby("epoch").train_acc.mean()
        if "train_acc" in df
        else pd.Series(np.nan, index=peak.index)
    )
    out = [
        late_after_fit(acc.index, acc.to_numpy(float), mid),
        compare(
            "maps_late_concentrate",
            f"late phase: mean peak patch weight of the drawn maps ({maps}) at the last drawn "
            f"epoch ({last}) / at the first drawn epoch ≥ half the run ({mid_txt}); per drawn "
            f"epoch: {per_epoch}{info}",
            ratio,
            ">=",
            LATE_PEAK_RATIO,
            kind="paper",
        ),
    ]
    if "final_probe_acc" in meta:
        out.append(
            compare(
                "probe_acc",
                "final held-out (probe) accuracy of the run the maps come from, ten classes, "
                "chance 0.1 (sanity)",
                meta["final_probe_acc"],
                ">=",
                PROBE_ACC,
                kind="sanity",
            )
        )
    return out


def fig7(fig7) -> list[Claim]:
    """Fig 7 (docs/papers/maxmargin.md#maxmargin_fig7), asserted over the second half of training
    and judged over the seeds (module docstring); the first design's whole-run halving of ζ is kept
    in the paper preset.  ``fig7``: the ``fig7`` group's ``(DataFrame, meta)``."""
    df, meta = fig7
    return judged_over_seeds(
        _fig7_claims, df, meta, _seed_meta, lambda d, m: (seed_mean_curves(d), _mean_meta(m))
    )


def _fig7_claims(df: pd.DataFrame, meta: dict) -> list[Claim]:
    """Fig 7's claims on one seed's curves (or the seed-mean curves)."""
    paper = meta.get("provenance", {}).get("preset") == "paper"
    d = df.sort_values("epoch")
    ep, zeta, w = d.epoch.to_numpy(), d.zeta.to_numpy(float), d.wnorm.to_numpy(float)
    half = late_start(ep)
    late = ep >= half
    n_late = int(late.sum())
    mid_i = int(np.argmax(late)) if n_late else None
    rho = LATE_RHO["paper" if paper else "quick"]
    # log(ζ / ζ₀), rounded at 1e-6: below that the two passes differ by float noise only
    z_w = np.round(np.log(zeta / d.zeta_qk0.to_numpy(float)), 6) if "zeta_qk0" in d else zeta
    rho_z = spearman(ep[late], z_w[late]) if n_late >= 3 else float("nan")
    rho_raw = spearman(ep[late], zeta[late]) if n_late >= 3 else float("nan")
    rho_w = spearman(ep[late], w[late]) if n_late >= 3 else float("nan")
    window = f"epochs {ep[late].min()}–{ep[late].max()}, {n_late} points" if n_late else "none"
    early = (
        f"whole run from epoch {ep[0]}: ρ(epoch, ζ) = {spearman(ep, zeta):.3f}, "
        f"ρ(epoch, ‖W‖_F) = {spearman(ep, w):.3f}, ζ {zeta[0]:.3f} → {zeta[-1]:.3f}, "
        f"‖W‖_F {w[0]:.3f} → {w[-1]:.3f}"
    )
    acc = d.train_acc.to_numpy(float) if "train_acc" in d else np.full(len(ep), np.nan)
    out = [
        late_after_fit(ep, acc, ep[mid_i] if mid_i is not None else None),
        compare(
            "zeta_late_trend",
            f"late phase ({window}): ζ falls through the learned W_q, W_k, Spearman "
            f"ρ(epoch, ζ / ζ₀), ζ₀ = ζ with the last layer's W_q, W_k at initialisation "
            f"(information: late ρ(epoch, ζ) = {rho_raw:.3f}; {early})",
            rho_z,
            "<",
            -rho,
            kind="paper",
        ),
        compare(
            "wnorm_late_trend",
            f"late phase ({window}): ‖W_qᵀW_k‖_F grows, Spearman ρ(epoch, ‖W‖_F)",
            rho_w,
            ">",
            rho,
            kind="paper",
        ),
    ]
    if mid_i is not None and ep[mid_i] != ep[-1]:
        drop = float(zeta[-1] / zeta[mid_i])
        mid_txt = f"epoch {ep[mid_i]}: ζ = {zeta[mid_i]:.3f}"
    else:
        drop, mid_txt = float("nan"), "none: no late epoch before the last"
    out.append(
        compare(
            "zeta_late_drop",
            f"late phase: ζ(last, epoch {ep[-1]}) / ζ(midpoint, {mid_txt}); ζ must still fall "
            f"by ≥ {1 - LATE_ZETA_RATIO:.0%} over the second half",
            drop,
            "<=",
            LATE_ZETA_RATIO,
            kind="paper",
        )
    )
    out.append(_qk_share(d, mid_i))
    if paper:
        out.append(
            compare(
                "zeta_halves",
                "ζ(last) / ζ(first logged epoch) (whole run; "
                "docs/papers/maxmargin.md#maxmargin_fig7)",
                zeta[-1] / zeta[0],
                "<=",
                0.5,
                kind="paper",
            )
        )
    finite = bool(np.isfinite(zeta).all() and np.isfinite(w).all())
    out.append(
        holds(
            "curves_finite",
            "every logged ζ and ‖W_qᵀW_k‖_F is finite (sanity)",
            finite,
            finite,
            kind="sanity",
        )
    )
    train_acc = d.train_acc.iloc[-1] if "train_acc" in d else float("nan")
    out.append(
        compare(
            "probe_acc",
            f"final held-out (probe) accuracy, ten classes, chance 0.1 (sanity; final training "
            f"accuracy {train_acc:.3f}, information)",
            d.probe_acc.iloc[-1],
            ">=",
            PROBE_ACC,
            kind="sanity",
        )
    )
    return out


def _qk_share(d, mid_i) -> Claim:
    """``zeta_qk_share``: how much of the late fall of log ζ the last layer's learned W_q, W_k
    produce (module docstring)."""
    ep = d.epoch.to_numpy()
    if "zeta_qk0" not in d or mid_i is None or ep[mid_i] == ep[-1]:
        share, info = float("nan"), "not measurable: no ζ₀ column or no late epoch before the last"
    else:
        lz = np.log(d.zeta.to_numpy(float))
        a = lz - np.log(d.zeta_qk0.to_numpy(float))
        fall = lz[-1] - lz[mid_i]
        share = float((a[-1] - a[mid_i]) / fall) if fall < 0 else float("nan")
        info = (
            f"epochs {ep[mid_i]}→{ep[-1]}: log ζ changes by {fall:+.3f}, of which "
            f"{a[-1] - a[mid_i]:+.3f} from the learned W_q, W_k; ζ₀ (initial W_q, W_k) "
            f"{np.exp(lz[mid_i] - a[mid_i]):.2f} → {np.exp(lz[-1] - a[-1]):.2f}"
            + ("" if fall < 0 else "; ζ does not fall, nothing to attribute")
        )
    return compare(
        "zeta_qk_share",
        "late phase: share of the fall of log ζ produced by the last layer's learned W_q, W_k "
        f"(ζ against ζ₀, the same model with that layer's W_q, W_k at initialisation; {info})",
        share,
        ">=",
        QK_SHARE,
        kind="paper",
    )
