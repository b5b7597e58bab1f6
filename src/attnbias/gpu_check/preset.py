"""What every part of the GPU check reads: the repository it runs from (its tests, its
configuration) and the paper preset's settings."""

from __future__ import annotations

from pathlib import Path

# the checkout this package runs from (src/attnbias/gpu_check/preset.py)
ROOT = Path(__file__).resolve().parents[3]


def paper_settings() -> dict:
    """The paper preset's settings (``config.yaml`` + ``workflow/presets/paper.yaml``); validated
    when jsonschema is installed (it is not needed)."""
    from attnbias.workflow import load_config

    return load_config(ROOT, scale="paper", validate=None)
