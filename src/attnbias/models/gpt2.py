"""GPT-2-style language models from transformers, and weight-decay groups by module path
(lowrank Fig 3, App. Fig. C, Table 1).

Weight decay (docs/papers/lowrank.md#what-gets-weight-decay): λ_SA on the self-attention matrices
(``attn.c_attn`` = [W_Q | W_K | W_V] and ``attn.c_proj`` = P), λ_MLP on the MLP matrices
(``mlp.c_fc``, ``mlp.c_proj``); biases, LayerNorm gains, token and position embeddings (the token
embedding is tied to the output layer) get none.  GPT-2 names both output projections ``c_proj``, so
groups are decided by the full module path.  :func:`decay_groups` is the generic builder (the ViT
groups live in :mod:`attnbias.models.vit`).

Speed (GPU): the vocabulary may be padded to a multiple of 64 rows (``pad_vocab_to``); the loss
and the evaluation still score the true vocabulary only (the padded logits are sliced off before
the softmax, so the padded rows get no gradient and the loss equals the unpadded model's up to
float rounding).  The model builds no key/value cache (``use_cache=False``) and attends with
:data:`ATTN_UNPADDED`, transformers' SDPA attention registered for unpadded windows: no mask is
built, so SDPA runs its causal flash kernel under ``torch.compile`` as it does in eager mode.
"""

from __future__ import annotations

import re

import torch

# transformers' SDPA attention under a name of its own, with no mask function: the model then
# passes no mask and SDPA runs with is_causal=True.  Under torch.compile, transformers' "sdpa"
# builds a full (b, 1, t, t) boolean mask instead (it cannot check the position ids for packed
# sequences while tracing, and before about v5.20 it also refused the causal shortcut), and SDPA
# falls back to its masked kernel over the whole square.  No padding masks (a model built with it
# refuses them); the token windows here are never padded.
ATTN_UNPADDED = "sdpa_unpadded"

# (group name, regular expression on the parameter name); the first match wins, the rest is "none"
GPT2_DECAY_GROUPS = (
    ("attn", r"(^|\.)h\.\d+\.attn\.(c_attn|c_proj)\.weight$"),
    ("mlp", r"(^|\.)h\.\d+\.mlp\.(c_fc|c_proj)\.weight$"),
)


def build_gpt2(vocab_size: int, n_positions: int, n_embd: int, n_layer: int, n_head: int,
               eos_id: int, seed: int = 0, dropout: float = 0.0, pad_vocab_to: int = 1,
               attn: str = ATTN_UNPADDED):  # fmt: skip
    """A randomly initialised ``GPT2LMHeadModel`` (tied embeddings, GELU MLP 4×).

    ``bos_token_id``/``eos_token_id`` are set to ``eos_id`` (GPT2Config's default 50256 is wrong for
    a small vocabulary).  ``pad_vocab_to`` rounds the embedding rows up to a multiple (e.g. 64 for
    50,257 → 50,304, faster matrix multiplies on GPU); ``config.real_vocab_size`` keeps the true
    vocabulary, the only columns :func:`lm_loss` and :func:`eval_lm_loss` score (the extra rows are
    never targets and never inputs, so they get no gradient).  ``attn``: :data:`ATTN_UNPADDED`
    (default), or any of transformers' implementations ("sdpa", "eager").
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    if not 0 <= eos_id < vocab_size:
        raise ValueError(f"eos_id {eos_id} is outside the vocabulary of {vocab_size}")
    rows = -(-vocab_size // pad_vocab_to) * pad_vocab_to
    cfg = GPT2Config(
        vocab_size=rows,
        real_vocab_size=vocab_size,
        # no key/value cache: nothing here generates; with it every layer copied its keys and
        # values into the cache in each training forward (and kept the copies for backward)
        use_cache=False,
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        tie_word_embeddings=True,
        loss_type="ForCausalLM",
        # GPT-2's tanh-approximate GELU (the default "gelu_new") as one fused torch op: the same
        # function, several elementwise Python-level ops fewer per MLP (about 10 % of a small
        # CPU model's step)
        activation_function="gelu_pytorch_tanh",
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(cfg)
    if attn == ATTN_UNPADDED:
        register_attention()
        model.register_forward_pre_hook(_refuse_padding_mask, with_kwargs=True)
    model.set_attn_implementation(attn)
    return model


def register_attention() -> None:
    """Register :data:`ATTN_UNPADDED` with transformers (idempotent): its SDPA attention function
    and no mask function, so that models using it receive no attention mask."""
    from transformers import AttentionInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    if ATTN_UNPADDED not in ALL_ATTENTION_FUNCTIONS.valid_keys():
        AttentionInterface.register(ATTN_UNPADDED, ALL_ATTENTION_FUNCTIONS["sdpa"])


def _refuse_padding_mask(module, args, kwargs):
    """:data:`ATTN_UNPADDED` drops attention masks: refuse one rather than ignore it."""
    if module.config._attn_implementation == ATTN_UNPADDED and (
        kwargs.get("attention_mask") is not None or (len(args) > 2 and args[2] is not None)
    ):
        raise ValueError(f"attention {ATTN_UNPADDED!r} takes no attention mask (unpadded windows "
                         "only); build the model with attn='sdpa' for padded batches")


def decay_groups(model: torch.nn.Module, rules, lambdas: dict[str, float]) -> list[dict]:
    """AdamW parameter groups by parameter name: ``rules`` = ((group, regex), …), ``lambdas`` =
    {group: λ}.  Unmatched parameters form the group ``none`` with λ = 0.  Every group carries its
    ``name`` and the ``names`` of its parameters (for tests and provenance); tied parameters
    appear once."""
    compiled = [(g, re.compile(rx)) for g, rx in rules]
    members: dict[str, list] = {g: [] for g, _ in rules}
    members["none"] = []
    seen = set()
    for name, p in model.named_parameters():
        if id(p) in seen or not p.requires_grad:
            continue
        seen.add(id(p))
        group = next((g for g, rx in compiled if rx.search(name)), "none")
        members[group].append((name, p))
    out = []
    for g, items in members.items():
        if items:
            decay = float(lambdas.get(g, 0.0)) if g != "none" else 0.0
            out.append({"params": [p for _, p in items], "weight_decay": decay, "name": g,
                        "names": [n for n, _ in items]})  # fmt: skip
    return out


def gpt2_param_groups(model, lam_sa: float, lam_mlp: float) -> list[dict]:
    """λ_SA on attention matrices, λ_MLP on MLP matrices, nothing else decayed."""
    return decay_groups(model, GPT2_DECAY_GROUPS, {"attn": lam_sa, "mlp": lam_mlp})


def real_vocab_size(model) -> int:
    """The true vocabulary of a model from :func:`build_gpt2` (its embedding may have more rows)."""
    cfg = model.config
    return int(getattr(cfg, "real_vocab_size", None) or cfg.vocab_size)


def next_token_ce(logits: torch.Tensor, ids: torch.Tensor, vocab: int,
                  reduction: str = "mean") -> torch.Tensor:  # fmt: skip
    """Cross-entropy of ``ids[:, 1:]`` given ``logits[:, :-1]`` over the first ``vocab`` columns.

    The targets are ``ids`` shifted left with the last position ignored (``-100``), so the (b, t, V)
    logits are used as they are instead of through a sliced copy of b·(t − 1) rows; the mean is over
    the t − 1 predicted positions, as before.  Columns past ``vocab`` (a padded vocabulary) are cut
    off before the softmax: the loss is the true vocabulary's, and the padded rows get no gradient.
    """
    targets = torch.nn.functional.pad(ids[:, 1:], (0, 1), value=-100)
    if logits.shape[-1] != vocab:
        logits = logits[..., :vocab]
    return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.flatten(),
                                             ignore_index=-100, reduction=reduction)  # fmt: skip


def lm_loss(model, batch) -> tuple[torch.Tensor, dict]:
    """Mean next-token cross-entropy of ``batch["ids"]`` (b, t) over the t − 1 predicted
    positions and the true vocabulary (:func:`next_token_ce`)."""
    ids = batch["ids"]
    logits = model(input_ids=ids, use_cache=False).logits
    return next_token_ce(logits, ids, real_vocab_size(model)), {}


@torch.no_grad()
def eval_lm_loss(model, windows: torch.Tensor, batch_size: int = 64, device=None,
                 bf16: bool = False) -> float:
    """Mean next-token cross-entropy (nats per token) over (n, ctx) windows and the true
    vocabulary, in float64 sums."""
    import contextlib

    device = device or next(model.parameters()).device
    vocab = real_vocab_size(model)
    was = model.training
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(windows), batch_size):
        ids = windows[i : i + batch_size].to(device)
        if bf16 and device.type == "cuda":
            ctx = torch.autocast("cuda", dtype=torch.bfloat16)
        else:
            ctx = contextlib.nullcontext()
        with ctx:
            logits = model(input_ids=ids, use_cache=False).logits
        ce = next_token_ce(logits, ids, vocab, reduction="sum")
        total += float(ce.double())
        count += ids[:, 1:].numel()
    model.train(was)
    return total / count


def flops_per_token(model, ctx: int) -> float:
    """Training FLOPs per token (PaLM appendix B convention): 6·N + 12·L·T·d, with N the parameters
    taking part in matrix multiplies (all but the position embeddings and LayerNorm/bias vectors;
    the tied token embedding counts once, as the output layer), L layers, T = ctx, d the width."""
    cfg = model.config
    n = sum(p.numel() for name, p in model.named_parameters() if p.ndim == 2 and "wpe" not in name)
    return 6.0 * n + 12.0 * cfg.n_layer * ctx * cfg.n_embd
