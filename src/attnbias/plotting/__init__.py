"""Plotting: shared style (:mod:`.style`) and one module per paper with one function per figure,
``plotting.<paper>.<fig>(<group>=(DataFrame, meta), ...)`` returning the matplotlib figure."""

from .style import (
    METHOD_COLORS,
    docstring_caption,
    mark_control,
    mark_run,
    new_figure,
    not_measurable_figure,
    save_figure,
    stand_in_title,
)

__all__ = [
    "METHOD_COLORS",
    "mark_control",
    "mark_run",
    "new_figure",
    "not_measurable_figure",
    "docstring_caption",
    "save_figure",
    "stand_in_title",
]
