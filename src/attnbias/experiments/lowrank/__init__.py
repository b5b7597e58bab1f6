"""Figure data for Kobayashi, Akram, von Oswald 2024, *Weight decay induces low-rank attention
layers* (methods page docs/papers/lowrank.md), one module per job family:

* :mod:`.toys`: Fig 1, App. Fig. A and figL, the float64 toys (CPU, seconds);
* :mod:`.recall`: Fig 2, associative-recall training runs and their gathering;
* :mod:`.lm`: Fig 3 (left), App. Fig. C and Table 1, GPT-2 language-model sweeps;
* :mod:`.vit`: Fig 3 (right), ViT sweeps;
* :mod:`.balance`: Fig 4 and App. Fig. B, balance of pretrained (and recall) attention;
* :mod:`.common`: the per-head rank/balance rows every training job records.

The workflow names its jobs ``lowrank.<func>`` or ``lowrank.<module>.<func>``
(:func:`attnbias.workflow.resolve`); both resolve, through the re-exports below.  The paper
preset's downloads live next to their data: :func:`~attnbias.data.text_lm.download_pile`,
:func:`~attnbias.data.pretrained.download_models`,
:func:`~attnbias.data.imagenet.download_image_dataset`.

The names below are re-exported lazily (PEP 562): importing the package loads only the module
of the name used, so a job imports its own module's dependencies and no other's.
"""

from __future__ import annotations

from ...lazy import lazy_exports

# public name -> module that defines it (relative to this package, or absolute)
_EXPORTS = {
    "download_image_dataset": "attnbias.data.imagenet",
    "download_models": "attnbias.data.pretrained",
    "download_pile": "attnbias.data.text_lm",
    "BALANCE_COLUMNS": ".balance",
    "Fig4Settings": ".balance",
    "FigBSettings": ".balance",
    "balance_rows": ".balance",
    "compute_balance": ".balance",
    "compute_figB": ".balance",
    "pretrained_balance": ".balance",
    "unbalance": ".balance",
    "HEAD_COLUMNS": ".common",
    "control_lambda": ".common",
    "head_rows": ".common",
    "LM_COLUMNS": ".lm",
    "LMSettings": ".lm",
    "gather_lm": ".lm",
    "lm_corpus": ".lm",
    "train_lm": ".lm",
    "RECALL_COLUMNS": ".recall",
    "RecallSettings": ".recall",
    "gather_fig2": ".recall",
    "train_recall": ".recall",
    "train_recall_job": ".recall",
    "CONVENTION": ".toys",
    "compute_fig1": ".toys",
    "compute_figA": ".toys",
    "compute_figL": ".toys",
    "fig1_grad_fn": ".toys",
    "figA_grad": ".toys",
    "figL_teacher": ".toys",
    "soft_threshold": ".toys",
    "VIT_COLUMNS": ".vit",
    "VitSettings": ".vit",
    "gather_vit": ".vit",
    "train_vit_wd": ".vit",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
