"""Figure data for Vasudeva, Deora, Thrampoulidis, *Implicit Bias and Fast Convergence Rates for
Self-attention* (methods page docs/papers/fastrates.md), one module per job family:

* :mod:`.synthetic`: the synthetic Figs 2, 3, 5 and the proposals Figs 8–10 (float64, full batch);
* :mod:`.mnist`: the proposal Fig 6 (the paper's one-layer model on digit patch tokens);
* :mod:`.finetune`: one BERT/MiniLM fine-tuning run of Figs 1 and 4;
* :mod:`.image`: one ViT run of the proposal Fig 7;
* :mod:`.runs`: what the deep-learning runs share (optimiser settings, curves, metadata);
* :mod:`.gather`: learning-rate selection and the plot-ready tables of Figs 1, 4 and 7.

The Snakemake rules name jobs as ``fastrates.<function>`` (:func:`attnbias.workflow.resolve`), so
the job functions are re-exported here, lazily: importing the package loads only the module of
the job that runs (a synthetic job never imports the training code, which is why each rule's
``code=`` list can name only its own modules).  ``fetch_assets`` (the paper preset's download rules)
lives in :mod:`attnbias.data.hub`.  Table 1 and the names shared with claims and plots are in
:mod:`attnbias.analysis.fastrates`.
"""

from __future__ import annotations

from ...lazy import lazy_exports

# public job function -> module that defines it (relative to this package, or absolute)
_EXPORTS = {
    "wonly_runs": ".synthetic",
    "compute_fig6": ".mnist",
    "train_text": ".finetune",
    "train_image": ".image",
    "gather_dl": ".gather",
    "edge_side": ".gather",
    "select_runs": ".gather",
    "fetch_assets": "attnbias.data.hub",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
