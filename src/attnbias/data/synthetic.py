"""Synthetic token sets of the max-margin token-selection paper (Tarzanagh et al. 2023).

The d = 3 construction: a token is (position₁, position₂, γ); W = diag(1, 1, 0) makes the first
two coordinates its key, v = (0, 0, 1) with Y = +1 reads the third as its score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

W_D3 = np.diag([1.0, 1.0, 0.0])
V_D3 = np.array([0.0, 0.0, 1.0])


@dataclass
class TokenProblem:
    """A fixed-head attention problem: tokens X (n, T, d), labels Y (n,), W (d, d), head v (d,)."""

    X: np.ndarray
    Y: np.ndarray
    W: np.ndarray
    v: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def K(self) -> np.ndarray:
        """Keys k_t = Wᵀx_t."""
        return np.einsum("ntd,de->nte", self.X, self.W)

    @property
    def gamma(self) -> np.ndarray:
        """Token scores γ_it = Y_i vᵀx_it."""
        return self.Y[:, None] * (self.X @ self.v)

    @property
    def opt(self) -> np.ndarray:
        return np.argmax(self.gamma, axis=1)


def d3_problem(positions, scores, Y=None, **meta) -> TokenProblem:
    """Build a d = 3 problem from 2-D key positions (n, T, 2) and scores γ (n, T)."""
    pos = np.asarray(positions, dtype=np.float64)
    sc = np.asarray(scores, dtype=np.float64)
    X = np.concatenate([pos, sc[..., None]], axis=-1)
    Y = np.ones(X.shape[0]) if Y is None else np.asarray(Y, dtype=np.float64)
    return TokenProblem(X=X, Y=Y, W=W_D3.copy(), v=V_D3.copy(), meta=meta)


def fig1_single_input(local: bool) -> TokenProblem:
    """Fig 1(a) (global: both non-optimal scores 0.9) or 1(b) (local: the origin token has
    γ = 0)."""
    scores = [[1.0, 0.9, 0.0 if local else 0.9]]
    return d3_problem(
        [[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]], scores, case="fig1b" if local else "fig1a"
    )


# Key coordinates of the Fig 1(c) data to 4 decimals (the table of
# docs/papers/maxmargin.md#maxmargin_fig1c), used as a cross-check
FIG1C_TABLE = np.array(
    [
        [[0.7748, -0.2305], [-1.0868, 1.1697], [-1.0632, 0.5770], [-1.2527, 1.0700],
         [-0.4760, -0.2525], [-0.5495, -0.7705], [-0.3867, -0.3413]],
        [[0.6890, -0.0683], [-0.8500, 0.8829], [-0.9633, 1.2779], [-0.8107, 0.8313],
         [-0.4937, -0.5985], [-0.4121, -0.4775], [-0.4118, -0.5205]],
        [[0.9421, 0.0105], [-0.5396, 0.7062], [-1.1138, 1.1840], [-0.7420, 0.7044],
         [-0.5946, -0.2349], [-0.6099, -0.5960], [-0.7134, -0.2770]],
    ]
)  # fmt: skip


# The first two coordinates of the paper's draw, X = 0.2·randn(3, 7, 3) from torch.Generator seeded
# 0 in float32, widened to float64 exactly: stored, so that the job needs no torch (≈ 0.7 s to
# import); tests/unit/test_maxmargin_figures.py draws it with torch and compares bit for bit.
FIG1C_DRAW = np.array(
    [
        [[-0.22516797482967377, -0.23047204315662384], [-0.0867757648229599, 0.16974207758903503],
         [-0.06320255249738693, -0.4230438768863678], [-0.2526669502258301, 0.06999664008617401],
         [0.023968301713466644, 0.24753157794475555], [-0.04945563152432442, -0.2705307602882385],
         [0.11333012580871582, 0.15870167315006256]],
        [[-0.31101903319358826, -0.06827207654714584], [0.15003789961338043, -0.11709951609373093],
         [0.03669558838009834, 0.2778732478618622], [0.18925967812538147, -0.1687353551387787],
         [0.0063185482285916805, -0.09853539615869522], [0.08793916553258896, 0.022482236847281456],
         [0.08823125809431076, -0.020461929962038994]],
        [[-0.057933539152145386, 0.01050149742513895], [0.46044108271598816, -0.29377877712249756],
         [-0.11384961754083633, 0.18399427831172943], [0.2579748332500458, -0.29563480615615845],
         [-0.09462396055459976, 0.26505497097969055], [-0.10994873195886612, -0.09596685320138931],
         [-0.2133960723876953, 0.22298792004585266]],
    ]
)  # fmt: skip


def fig1c_positions() -> tuple[np.ndarray, str]:
    """Fig 1(c) key positions: the draw :data:`FIG1C_DRAW` (torch.Generator seeded 0), then shifted;
    within 10⁻⁴ of the 4-decimal table :data:`FIG1C_TABLE`.

    Returns (positions (3, 7, 2), source "torch-seed-0").
    """
    pos = FIG1C_DRAW.copy()
    pos[:, 0] += (1.0, 0.0)
    pos[:, 1:4] += (-1.0, 1.0)
    pos[:, 4:7] += (-0.5, -0.5)
    return pos, "torch-seed-0"


def fig1c_problem() -> TokenProblem:
    """n = 3, T = 7: optimal token 0 (γ = 1), six others with γ = 0.5 (Assumption B)."""
    pos, source = fig1c_positions()
    scores = np.full((3, 7), 0.5)
    scores[:, 0] = 1.0
    return d3_problem(pos, scores, case="fig1c", source=source)


def fig2_problem() -> TokenProblem:
    """Project construction for the cone of Thm 3: LMM (1, 0), GMM ∝ (−0.5, 0.5)."""
    return d3_problem([[[-1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]], [[1.0, 0.9, 0.0]], case="fig2")


def fig3_joint_problem(relaxed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Fig 3 tokens X (3, 2, 2) and labels Y; the yellow star at (0.5, 1.5) in (b) (``relaxed``)."""
    yellow = [0.5, 1.5] if relaxed else [0.5, 1.0]
    X = np.array([[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]], [[0.0, 0.0], yellow]])
    return X, np.array([1.0, -1.0, 1.0])


def fig5_problem(C: float) -> TokenProblem:
    """Two inputs: (0,0) γ=0 and (1,1) γ=C; (0,0) γ=0 and (1,−1) γ=1."""
    return d3_problem(
        [[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]]],
        [[0.0, C], [0.0, 1.0]],
        case="fig5",
        C=C,
    )


def fig8_problem() -> TokenProblem:
    """Project construction, n = 2, T = 2: GMM (1, 3), LMM (1, 0) whose teal square has no
    neighbour."""
    return d3_problem(
        [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [2.0, 0.0]]], [[1.0, 0.0], [1.0, 0.0]], case="fig8"
    )


def sphere(rng: np.random.Generator, shape: tuple, d: int) -> np.ndarray:
    """Uniform samples on S^{d−1} with leading ``shape``."""
    g = rng.standard_normal(shape + (d,))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def random_sphere_trials(d: int, trials: int, n: int, T: int, seed: int, init_scale: float = 0.01):
    """Fig 9/10 study: tokens and head uniform on S^{d−1}, Y uniform ±1, W = I, p0 = scale·N(0, I).

    Drawn in the order v, Y, X, p0 from ``numpy.random.default_rng(seed)``, all trials at once.
    Returns X (trials, n, T, d), Y (trials, n), v (trials, d), p0 (trials, d).
    """
    rng = np.random.default_rng(seed)
    v = sphere(rng, (trials,), d)
    Y = rng.choice([-1.0, 1.0], size=(trials, n))
    X = sphere(rng, (trials, n, T), d)
    p0 = init_scale * rng.standard_normal((trials, d))
    return X, Y, v, p0
