"""A figure of a run beside the same figure of the reference run (``snakemake compare``): the two
rendered pictures side by side, each titled with the run it comes from."""

from __future__ import annotations

from pathlib import Path

from .style import new_figure, save_figure


def figure_pair(reference_png, other_png, reference_title: str, other_title: str, out_png) -> None:
    """Write ``out_png`` (and its PDF): ``reference_png`` on the left, ``other_png`` on the right,
    at their own aspect ratios; a missing reference is said in its panel."""
    import matplotlib.image as mpimg

    other = mpimg.imread(other_png)
    ref = mpimg.imread(reference_png) if Path(reference_png).exists() else None
    height = 4.0
    width = height * (other.shape[1] / other.shape[0]) * 2
    fig, axes = new_figure(width, height + 0.4, ncols=2)
    for ax, img, title in ((axes[0], ref, reference_title), (axes[1], other, other_title)):
        ax.set_axis_off()
        ax.set_title(title, fontsize=8)
        if img is None:
            ax.text(0.5, 0.5, "not built in the reference run", ha="center", va="center",
                    transform=ax.transAxes)  # fmt: skip
        else:
            ax.imshow(img)
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, Path(out_png).with_suffix(".pdf"), out_png)
