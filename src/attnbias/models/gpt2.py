"""GPT-2-style language models from transformers, and weight-decay groups by module path
(lowrank Fig 3, App. Fig. C, Table 1).

Weight decay (docs/papers/lowrank.md#what-gets-weight-decay): λ_SA on the self-attention matrices
(``attn.c_attn`` = [W_Q | W_K | W_V] and ``attn.c_proj`` = P), λ_MLP on the MLP matrices
(``mlp.c_fc``, ``mlp.c_proj``); biases, LayerNorm gains, token and position embeddings (the token
embedding is tied to the output layer) get none.  GPT-2 names both output projections ``c_proj``, so
groups are decided by the full module path.  :func:`decay_groups` is the generic builder (the ViT
groups live in :mod:`attnbias.models.vit`).
"""

from __future__ import annotations

import re

import torch

# (group name, regular expression on the parameter name); the first match wins, the rest is "none"
GPT2_DECAY_GROUPS = (
    ("attn", r"(^|\.)h\.\d+\.attn\.(c_attn|c_proj)\.weight$"),
    ("mlp", r"(^|\.)h\.\d+\.mlp\.(c_fc|c_proj)\.weight$"),
)


def build_gpt2(vocab_size: int, n_positions: int, n_embd: int, n_layer: int, n_head: int,
               eos_id: int, seed: int = 0, dropout: float = 0.0, pad_vocab_to: int = 1,
               attn: str = "sdpa"):  # fmt: skip
    """A randomly initialised ``GPT2LMHeadModel`` (tied embeddings, GELU MLP 4×).

    ``bos_token_id``/``eos_token_id`` are set to ``eos_id`` (GPT2Config's default 50256 is wrong for
    a small vocabulary).  ``pad_vocab_to`` rounds the embedding rows up to a multiple (e.g. 64 for
    50,257 → 50,304, faster matrix multiplies on GPU; the extra rows are never targets).
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    if not 0 <= eos_id < vocab_size:
        raise ValueError(f"eos_id {eos_id} is outside the vocabulary of {vocab_size}")
    rows = -(-vocab_size // pad_vocab_to) * pad_vocab_to
    cfg = GPT2Config(
        vocab_size=rows,
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
    model.set_attn_implementation(attn)
    return model


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


def lm_loss(model, batch) -> tuple[torch.Tensor, dict]:
    """Mean next-token cross-entropy of ``batch["ids"]`` (b, t) over the t − 1 predicted
    positions."""
    ids = batch["ids"]
    logits = model(input_ids=ids).logits
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]),
                                             ids[:, 1:].reshape(-1))
    return loss, {}


@torch.no_grad()
def eval_lm_loss(model, windows: torch.Tensor, batch_size: int = 64, device=None,
                 bf16: bool = False) -> float:
    """Mean next-token cross-entropy (nats per token) over (n, ctx) windows, in float64 sums."""
    import contextlib

    device = device or next(model.parameters()).device
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
            logits = model(input_ids=ids).logits
        ce = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]),
                                               ids[:, 1:].reshape(-1), reduction="sum")
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
