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


def prior_loss(data_info: dict | None) -> float | None:
    """H, the cross-entropy of predicting the class shares p_c = c / Σc for every example,
    −Σ p_c log p_c over ``data_info["class_counts"]`` (nats): the loss a classifier reaches by
    learning nothing but the label frequencies.  The fastrates regime check ``sgd_learned`` asks
    SGD's final train loss to be at most half of it.  None when the run records no class counts."""
    import math

    counts = [c for c in (data_info or {}).get("class_counts") or [] if c > 0]
    if not counts:
        return None
    total = sum(counts)
    return -sum(c / total * math.log(c / total) for c in counts)
