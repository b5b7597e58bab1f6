"""The training engine: augmentation, determinism, checkpoint/resume, device selection, loaders."""

import json

import numpy as np
import pytest
import torch

from attnbias.data.hub import DatasetUnavailable
from attnbias.data.images import first_of_each_class, load_cifar10
from attnbias.train import TrainConfig, fit, random_crop_flip, resolve_device


def test_crop_flip_identity_and_content():
    x = torch.arange(2 * 1 * 4 * 4, dtype=torch.float32).reshape(2, 1, 4, 4)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(random_crop_flip(x, 0, False, g), x)
    out = random_crop_flip(x, 2, True, torch.Generator().manual_seed(1))
    assert out.shape == x.shape
    # every output pixel is either padding (0) or a pixel of the same image, in order along rows
    for b in range(2):
        vals = set(out[b].flatten().tolist()) - {0.0}
        assert vals <= set(x[b].flatten().tolist())


def test_crop_reproduces_a_known_shift():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    g = torch.Generator().manual_seed(0)
    gy = torch.Generator().manual_seed(0)
    oy, ox = (
        torch.randint(0, 3, (1,), generator=gy).item(),
        torch.randint(0, 3, (1,), generator=gy).item(),
    )
    out = random_crop_flip(x, 1, False, g)
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1))
    assert torch.equal(out[0, 0], padded[0, 0, oy : oy + 4, ox : ox + 4])


def _task(n=96, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return {"x": x, "y": y}


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def _loss(m, batch):
    logits = m(batch["x"])
    return torch.nn.functional.cross_entropy(logits, batch["y"]), {
        "acc": (logits.argmax(-1) == batch["y"]).float().mean()
    }


def _eval(m, epoch):
    with torch.no_grad():
        return {"w_norm": float(sum(p.norm() ** 2 for p in m.parameters()) ** 0.5)}


CFG = TrainConfig(epochs=6, batch_size=16, lr=0.05, optimizer="sgd", momentum=0.9, seed=3)


def test_training_learns_and_is_deterministic(tmp_path):
    h1 = fit(
        _model(),
        _task(),
        _loss,
        CFG,
        torch.device("cpu"),
        on_row=_eval,
        progress=False,
        image_key=None,
    )
    h2 = fit(
        _model(),
        _task(),
        _loss,
        CFG,
        torch.device("cpu"),
        on_row=_eval,
        progress=False,
        image_key=None,
    )
    assert _strip(h1) == _strip(h2)
    assert len(h1) == 7 and h1[0]["epoch"] == 0
    assert h1[-1]["acc"] > 0.9 and h1[-1]["train_loss"] < h1[1]["train_loss"]


def _strip(h):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in h]


def test_resume_after_crash_matches_uninterrupted(tmp_path):
    full = fit(
        _model(),
        _task(),
        _loss,
        CFG,
        torch.device("cpu"),
        on_row=_eval,
        progress=False,
        image_key=None,
    )
    ckpt, log = tmp_path / "ckpt.pt", tmp_path / "metrics.jsonl"

    def crash_at_4(m, epoch):
        if epoch == 4:
            raise KeyboardInterrupt("killed")
        return _eval(m, epoch)

    with pytest.raises(KeyboardInterrupt):
        fit(
            _model(),
            _task(),
            _loss,
            CFG,
            torch.device("cpu"),
            checkpoint=ckpt,
            metrics_log=log,
            on_row=crash_at_4,
            progress=False,
            image_key=None,
        )
    assert torch.load(ckpt, weights_only=False)["row"] == 3
    assert len(log.read_text().splitlines()) == 4  # epochs 0..3
    resumed = fit(
        _model(),
        _task(),
        _loss,
        CFG,
        torch.device("cpu"),
        checkpoint=ckpt,
        metrics_log=log,
        on_row=_eval,
        progress=False,
        image_key=None,
    )
    assert _strip(resumed) == _strip(full)
    assert [json.loads(ln)["epoch"] for ln in log.read_text().splitlines()] == list(range(7))


def test_checkpoint_of_other_settings_is_ignored(tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    fit(
        _model(),
        _task(),
        _loss,
        CFG,
        torch.device("cpu"),
        checkpoint=ckpt,
        progress=False,
        image_key=None,
    )
    other = TrainConfig(epochs=2, batch_size=16, lr=0.01, optimizer="sgd", seed=3)
    h = fit(
        _model(),
        _task(),
        _loss,
        other,
        torch.device("cpu"),
        checkpoint=ckpt,
        progress=False,
        image_key=None,
    )
    assert [r["epoch"] for r in h] == [1, 2]  # trained from scratch


def test_checkpoint_of_a_differently_shaped_model_is_ignored(tmp_path, caplog):
    """Same settings, other shapes (e.g. a checkpoint from before the vocabulary was cut to the
    rows the data use): trained afresh, not a load error."""
    ckpt = tmp_path / "ckpt.pt"
    fit(_model(), _task(), _loss, CFG, torch.device("cpu"), checkpoint=ckpt, progress=False,
        image_key=None)  # fmt: skip
    torch.manual_seed(0)
    wider = torch.nn.Sequential(torch.nn.Linear(6, 24), torch.nn.Tanh(), torch.nn.Linear(24, 2))
    caplog.set_level("WARNING", logger="attnbias.train")
    h = fit(wider, _task(), _loss, CFG, torch.device("cpu"), checkpoint=ckpt, progress=False,
            image_key=None)  # fmt: skip
    assert [r["epoch"] for r in h] == list(range(1, 7)) and "different settings or shapes" in (
        caplog.text
    )


def test_device_selection():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA"):
            resolve_device("cuda")


def test_unknown_optimizer():
    with pytest.raises(ValueError, match="unknown optimizer"):
        fit(
            _model(),
            _task(),
            _loss,
            TrainConfig(epochs=1, batch_size=8, lr=0.1, optimizer="lion"),
            torch.device("cpu"),
            progress=False,
            image_key=None,
        )


def _write_hub_cifar(root, n_train=12, n_test=8):
    """A tiny dataset in the hub layout of uoft-cs/cifar10 (parquet; columns img, label)."""
    import datasets
    from PIL import Image

    names = [
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    ]
    feats = datasets.Features({"img": datasets.Image(), "label": datasets.ClassLabel(names=names)})
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("test", n_test)):
        imgs = [
            Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)) for _ in range(n)
        ]
        ds = datasets.Dataset.from_dict(
            {"img": imgs, "label": [i % 10 for i in range(n)]}, features=feats
        )
        (root / "plain_text").mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(root / "plain_text" / f"{split}-00000-of-00001.parquet"))
    return root


def test_cifar10_loader_on_local_hub_format(tmp_path):
    root = _write_hub_cifar(tmp_path / "cifar10")
    splits = load_cifar10(str(root))
    assert splits.x_train.shape == (12, 3, 32, 32) and splits.x_train.dtype == torch.uint8
    assert splits.x_test.shape == (8, 3, 32, 32)
    assert splits.y_test.tolist() == [i % 10 for i in range(8)]
    z = splits.normalise(splits.x_train)
    assert z.dtype == torch.float32 and abs(float(z.mean())) < 1.0
    assert first_of_each_class(splits.y_test, [0, 1, 5]) == [0, 1, 5]


def test_cifar10_offline_fails_with_instructions(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable) as err:
        load_cifar10("uoft-cs/cifar10")
    msg = str(err.value)
    assert "uoft-cs/cifar10" in msg and "quick" in msg and "load_dataset" in msg


@pytest.mark.parametrize("name,extra", [("sngd", {}), ("sps", {"c": 0.5}), ("adamw", {})])
def test_engine_runs_the_stochastic_optimizers(name, extra):
    cfg = TrainConfig(
        epochs=3,
        batch_size=16,
        lr=0.05 if name != "adamw" else 0.01,
        optimizer=name,
        seed=1,
        extra=extra,
    )
    h = fit(_model(), _task(), _loss, cfg, torch.device("cpu"), progress=False, image_key=None)
    assert h[-1]["train_loss"] < h[0]["train_loss"]


def test_adam_updates_are_bit_identical_to_the_per_tensor_loop():
    """The engine's Adam/AdamW take the multi-tensor update on CPU (less Python a step); it gives
    the same parameters, bit for bit, as torch's per-tensor loop."""
    from attnbias.train.engine import make_optimizer

    torch.manual_seed(0)
    for name in ("adam", "adamw"):
        cfg = TrainConfig(epochs=1, batch_size=1, lr=1e-2, optimizer=name, weight_decay=0.1)
        a = [torch.randn(n, requires_grad=True) for n in (3, 17, 300)]
        b = [t.detach().clone().requires_grad_() for t in a]
        opt_a = make_optimizer(a, cfg)
        opt_b = getattr(torch.optim, "AdamW" if name == "adamw" else "Adam")(
            b, lr=1e-2, weight_decay=0.1, foreach=False
        )
        assert opt_a.defaults["foreach"] is True
        for _ in range(5):
            for x, y in zip(a, b, strict=True):
                x.grad = torch.sin(x.detach() * 3)
                y.grad = torch.sin(y.detach() * 3)
            opt_a.step()
            opt_b.step()
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
