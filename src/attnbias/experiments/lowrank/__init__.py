"""Figure data for Kobayashi, Akram, von Oswald 2024, *Weight decay induces low-rank attention
layers* (spec ``shared/specs/lowrank.md``), one module per job family:

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
"""

from ...data.imagenet import download_image_dataset
from ...data.pretrained import download_models
from ...data.text_lm import download_pile
from .balance import (
    BALANCE_COLUMNS,
    Fig4Settings,
    FigBSettings,
    balance_rows,
    compute_balance,
    compute_figB,
    pretrained_balance,
    unbalance,
)
from .common import HEAD_COLUMNS, control_lambda, head_rows
from .lm import LM_COLUMNS, LMSettings, gather_lm, lm_corpus, train_lm
from .recall import RECALL_COLUMNS, RecallSettings, gather_fig2, train_recall, train_recall_job
from .toys import (
    CONVENTION,
    compute_fig1,
    compute_figA,
    compute_figL,
    fig1_grad_fn,
    figA_grad,
    figL_teacher,
    soft_threshold,
)
from .vit import VIT_COLUMNS, VitSettings, gather_vit, train_vit_wd

__all__ = [
    "BALANCE_COLUMNS",
    "CONVENTION",
    "Fig4Settings",
    "FigBSettings",
    "HEAD_COLUMNS",
    "LM_COLUMNS",
    "LMSettings",
    "RECALL_COLUMNS",
    "RecallSettings",
    "VIT_COLUMNS",
    "VitSettings",
    "balance_rows",
    "compute_balance",
    "compute_fig1",
    "compute_figA",
    "compute_figB",
    "compute_figL",
    "control_lambda",
    "download_image_dataset",
    "download_models",
    "download_pile",
    "fig1_grad_fn",
    "figA_grad",
    "figL_teacher",
    "gather_fig2",
    "gather_lm",
    "gather_vit",
    "head_rows",
    "lm_corpus",
    "pretrained_balance",
    "soft_threshold",
    "train_lm",
    "train_recall",
    "train_recall_job",
    "train_vit_wd",
    "unbalance",
]
