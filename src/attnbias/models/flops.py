"""Model FLOPs of the transformers the papers train, and the device peaks they are divided by: the
two halves of the model-FLOPs utilisation (MFU) that the GPU check (``python -m
attnbias.gpu_check``) and the throughput benchmarks (``benchmarks/bench_*.py``,
``benchmarks/mfu_levers.py``) report.

Counting convention (the usual one for MFU, e.g. the PaLM paper's appendix B): only matrix
products count, at 2 FLOPs per multiply-add, so a product of an ``a × b`` and a ``b × c`` matrix
costs ``2·a·b·c``.  LayerNorm, softmax, GELU, biases, dropout and the optimiser's update are not
counted (they are a few per cent at these widths).  A training step costs
:data:`TRAIN_PER_FORWARD` = 3 forward passes: the backward pass computes, for every product of the
forward pass, two products of the same size (the gradient with respect to its input and with
respect to its weights).

* ViT (maxmargin Figs 6-7, fastrates Fig 7, lowrank Fig 3 right): :func:`vit_forward_flops`, per
  image.
* BERT (fastrates Figs 1, 4): :func:`bert_forward_flops_per_token`.
* GPT-2 (lowrank Fig 3, App. C, Table 1): ``attnbias.models.gpt2.flops_per_token``, the training
  FLOPs per token 6·N + 12·L·T·d, counted from the model's own parameters (N: those taking part in
  matrix products, the tied embedding once).

MFU = model FLOPs per item × items per second ÷ :func:`peak_bf16` of the device.
"""

from __future__ import annotations

TRAIN_PER_FORWARD = 3  # forward + backward (two products per forward product)

# Dense bf16 tensor-core peak, FLOP/s, by (a substring of) the CUDA device name; the first match
# wins, so the specific names come first.  H100 SXM (HBM3): 989 TFLOP/s.
PEAK_BF16 = (
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),
    ("H200", 989e12),
    ("GH200", 989e12),
    ("A100", 312e12),
    ("L40S", 362e12),
)


def peak_bf16(device_name: str) -> float | None:
    """The datasheet's dense bf16 peak of a CUDA device, in FLOP/s.

    Parameters
    ----------
    device_name : str
        The device's name as ``torch.cuda.get_device_name`` gives it (``"NVIDIA H100 80GB
        HBM3"``).

    Returns
    -------
    float or None
        The first entry of :data:`PEAK_BF16` whose key is part of the name; None for a device not
        in the table (its MFU is then not computed).
    """
    return next((v for k, v in PEAK_BF16 if k in device_name), None)


def vit_forward_flops(
    image: int, patch: int, channels: int, hidden: int, layers: int, mlp: int, classes: int
) -> float:
    """Forward-pass FLOPs of a ViT (timm's ``VisionTransformer`` from
    ``attnbias.models.vit.build_vit``) for one image.

    The image is cut into ``P = (image / patch)²`` patches (``patch_embed.proj``) and a class token
    is added, so the encoder sees ``n = P + 1`` tokens of width ``d = hidden``.  The matrix
    products:

    * patch embedding, each patch's ``patch²·channels`` values mapped to ``d``:
      ``2·P·(patch²·channels)·d``;
    * per layer (``blocks.N``), the query, key and value projections (``attn.qkv``, one fused
      ``d × 3d`` matrix) and the output projection (``attn.proj``), four ``d × d`` matrices applied
      to ``n`` tokens: ``2·n·d·4d``; the attention scores ``Q Kᵀ`` (``n × d`` by ``d × n``) and the
      weighted values (``n × n`` by ``n × d``): ``2·2·n²·d``; the MLP (``mlp.fc1``, ``mlp.fc2``:
      ``d → mlp → d``): ``2·2·n·d·mlp``;
    * the classifier (``head``) on the class token: ``2·d·classes``.

    Total: ``2·P·(patch²·channels)·d + layers·[2·n·d·4d + 2·2·n²·d + 2·2·n·d·mlp] +
    2·d·classes``; a training step is :data:`TRAIN_PER_FORWARD` times that.

    Parameters
    ----------
    image : int
        Side of the (square) input image, in pixels.
    patch : int
        Side of a patch, in pixels (divides ``image``).
    channels : int
        Colour channels of the image.
    hidden : int
        Width ``d`` of the encoder.
    layers : int
        Encoder layers.
    mlp : int
        Hidden width of each layer's MLP.
    classes : int
        Outputs of the classifier.

    Returns
    -------
    float
        FLOPs of one image's forward pass.
    """
    side = image // patch
    n = side**2 + 1
    embed = 2 * side**2 * (patch * patch * channels) * hidden
    per_layer = 2 * n * hidden * 4 * hidden + 2 * 2 * n * n * hidden + 2 * 2 * n * hidden * mlp
    return float(embed + layers * per_layer + 2 * hidden * classes)


def bert_forward_flops_per_token(hidden: int, layers: int, mlp: int, length: int) -> float:
    """Forward-pass FLOPs of a BERT encoder per token of a sequence of ``length`` tokens.

    Per layer and token, with ``d = hidden``: the query, key, value and output projections
    (``4·d²`` multiply-adds) and the MLP (``d → mlp → d``, ``2·d·mlp``) give ``2·(4d² +
    2·d·mlp)``; the token's attention scores against the ``length`` keys and its weighted sum of
    the ``length`` values give ``2·2·length·d``.  Total ``layers·[2·(4d² + 2·d·mlp) +
    2·2·length·d]``; the embeddings, the pooler and the classification head are not counted.  A
    training step is :data:`TRAIN_PER_FORWARD` times that.

    Parameters
    ----------
    hidden : int
        Width ``d`` of the encoder.
    layers : int
        Encoder layers.
    mlp : int
        Hidden width of each layer's MLP (``intermediate_size``).
    length : int
        Tokens of the sequence (padded or trimmed length: every position is computed).

    Returns
    -------
    float
        FLOPs of one token's forward pass.
    """
    return float(layers * (2 * (4 * hidden * hidden + 2 * hidden * mlp) + 2 * 2 * length * hidden))
