"""Entry point of the rules `robustness_default` and `robustness_seed`: one seed's claim table.

Seed 0 reads this run's claim files (inputs ``claims``).  Seed N first runs this workflow with
every random seed shifted by N (``snakemake --configfile <the settings of this run> --config
seed=N <the claim files of the figures the seed redraws>``, into that seed's own results folder,
with this run's execution options: a cluster run's seed runs submit to the same cluster), then
reads that run's claim files.  A figure whose jobs failed at that seed gets one failed sanity row,
``ran``, pointing at the seed run's logs, so the summary shows the gap instead of hiding it.  An
interrupted seed run (Ctrl-C, a cancelled cluster job) interrupts this job too, which then reruns;
a seed run that made no claim file at all fails it."""

import subprocess
import sys
from pathlib import Path

from attnbias.claims.robustness import SEED_COLUMNS, seed_table
from attnbias.io import save_data
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p, out = snakemake.params, snakemake.output  # noqa: F821
    if p.seed == 0:
        files, missing = list(snakemake.input.claims), []  # noqa: F821
    else:
        cmd = [
            sys.executable, "-m", "snakemake", *p.targets, "--snakefile", p.snakefile,
            "--cores", str(snakemake.threads), "--keep-going", "--rerun-incomplete",  # noqa: F821
            *p.forward,
            "--configfile", snakemake.input.config, "--config", f"seed={p.seed}",  # noqa: F821
        ]  # fmt: skip
        log.info("seed %d: %s", p.seed, " ".join(cmd))
        sys.stdout.flush()
        rc = subprocess.run(cmd, stdout=sys.stdout, stderr=subprocess.STDOUT).returncode
        log.info("the seed-%d run exited with %d", p.seed, rc)
        files = [f for f in p.targets if Path(f).is_file()]
        missing = [f for f in p.targets if not Path(f).is_file()]
        if rc != 0 and not files:  # nothing ran (a config error, an interrupted start): retry
            raise RuntimeError(f"the seed-{p.seed} run made no claim file (exit {rc}): see above")
    df = seed_table(files, p.seed, p.redrawn)
    for f in missing:  # <folder>/claims/<paper>/<fig>.json
        paper, fig = Path(f).parent.name, Path(f).stem
        row = dict.fromkeys(SEED_COLUMNS)
        row.update(
            seed=p.seed, paper=paper, figure=fig, kind="sanity", claim="ran",
            statement="The figure's jobs ran at this seed", threshold="a claim file",
            value=f"no claim file: see {p.folder}/logs", value_num=float("nan"), passed=False,
            margin=float("nan"), redrawn=True,
        )  # fmt: skip
        df.loc[len(df)] = row
        log.warning("seed %d: %s %s has no claim file", p.seed, paper, fig)
    meta = {"columns": SEED_COLUMNS, "seed": p.seed, "missing": missing}
    save_data(df, meta, out.csv, preset=p.preset)
    log.info("seed %d: %d claims of %d figures", p.seed, len(df), df.figure.nunique())
