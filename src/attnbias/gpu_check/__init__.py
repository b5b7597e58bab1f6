"""The GPU check: run it on a GPU machine before the paper preset spends hours there.  CUDA tests,
throughput and MFU benchmarks, a short training loop of every GPU training family, peak GPU
memory: one command, one report (docs/gpu.md)::

    python -m attnbias.gpu_check --out gpu-check/        # on the GPU (15 min at most)
    python -m attnbias.gpu_check --out /tmp/gc --cpu     # the tiny CPU mode (CI)
    python -m attnbias.gpu_check --list                  # the parts

Run it from a checkout of the repository (its pytest part runs the repository's CUDA tests, and
every part reads the paper preset from ``config.yaml`` and ``workflow/presets/paper.yaml``).  It
needs only torch, transformers, tokenizers, safetensors, numpy, pandas, PyYAML, matplotlib,
scikit-learn and pytest (no Snakemake, datasets, cvxopt or jsonschema, no network): every model is
built from its configuration with random weights, every dataset is synthetic data of the paper's
shapes.

The modules, one concept each; the imports run one way, from the command down:

* :mod:`.cli` — the command: each part in a child process forked from it, under its own time
  limit, within the run's budget; the report rewritten after every part;
* :mod:`.report` — the report: complete or not (:func:`.report.report_problems`), its markdown,
  how its numbers are computed;
* :mod:`.parts` — the parts (:data:`.parts.PARTS`) and how one runs (:func:`.parts.run_part`);
* :mod:`.device` — the device's measured ceilings and every part's peak memory;
* :mod:`.cuda_tests` — ``pytest -m gpu`` over the files that hold CUDA tests;
* :mod:`.throughput` — training throughput and MFU of the three transformers (FLOP counts:
  :mod:`attnbias.models.flops`);
* :mod:`.families` — a short paper-configuration run of every GPU training family, through its
  own experiment function, and the projected GPU time of one paper run;
* :mod:`.standins` — the synthetic data put in place of the hub loaders, and the tiny sizes of
  the CPU mode;
* :mod:`.preset` — the repository and the paper preset's settings.

:mod:`.recall` is the other command run on a GPU machine: lowrank Fig 2 at the paper preset's
size, the plot-ready table committed under ``workflow/precomputed/`` (``python -m
attnbias.gpu_check.recall``).

The GPU check is a tool on top of the package: it imports the experiments, the training engine
and the models; no module of the package imports it (tests/unit/test_layering.py).
"""
