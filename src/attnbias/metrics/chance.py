"""Chance level of a classifier: whether a deep-learning run learned anything.

Kept apart from :mod:`.core` (imported by ``attnbias.metrics``), so that the training and
trajectory jobs, whose code includes the package, are not rerun by an edit here: its readers are
the fastrates gather (the learning-rate selection) and claims (the sanity check ``trained``)."""

from __future__ import annotations

# A classifier "learned" when its accuracy beats the majority-class share by at least this much: the
# sanity check `trained` asks it of every selected run on the test split, the learning-rate
# selection of every seed's run on the validation split.
LEARNED_MARGIN = 0.02


def majority_share(data_info: dict | None) -> float | None:
    """The majority-class share of a run's labels, ``max(c) / sum(c)`` over
    ``data_info["class_counts"]``: the accuracy of always answering the most frequent class.  None
    when the run records no class counts."""
    counts = (data_info or {}).get("class_counts")
    return max(counts) / sum(counts) if counts else None
