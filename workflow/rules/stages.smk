# The stages of a synthetic figure group, each a rule written once with wildcards: `instance` (the
# data: results/stages/{paper}/{group}.instance.npz) → `svm` (its max-margin solutions:
# results/stages/{paper}/{group}.svm.npz) → `compute` (figures.smk: the GD trajectories, the
# plot-ready results/data/{paper}/{group}.{csv,json}).  One table entry per group
# (`register_stages`, in the paper files) names its three functions and which of its settings
# (config[paper][group]) each stage takes, so a GD setting (steps, lr) reruns the trajectories only.

# (paper, group) -> the stage entry: rules `instance` and `svm`.
STAGES = {}


def stage_file(paper, group, stage):
    """The .npz a stage writes (attnbias.io.save_arrays): ``stage`` is "instance" or "svm"."""
    return f"results/stages/{paper}/{group}.{stage}.npz"


def register_stages(
    paper, group, figures, problems, trajectories, data, svm, gd, **resources
):
    """Register a synthetic group as three stages (attnbias.experiments.<module>.<function>):

    * ``<problems>.instance_<group>(**data settings) -> (arrays, doc)``: rule `instance`;
    * ``<problems>.svm_<group>(instance, **svm settings) -> (arrays, doc)``: rule `svm`
      (``svm=None``: the group has no SVM stage, said here explicitly);
    * ``<trajectories>.trajectories_<group>(instance, svm, **settings) -> (df, meta)``: rule
      `compute`, with all the group's settings (its sidecar records them).

    ``data``, ``svm``, ``gd``: the names of the settings of config[paper][group] each stage is
    about; together exactly the group's settings, each once.  The `instance` and `svm` jobs get
    only theirs, so a GD setting reruns the trajectories only.  ``resources``: those of
    :func:`register_compute` for the `compute` job.
    """
    settings = config[paper][group]
    svm_stage = svm is not None
    given = [*data, *(svm or []), *gd]
    if sorted(given) != sorted(settings) or len(set(given)) != len(given):
        raise WorkflowError(
            f"register_stages({paper!r}, {group!r}): data + svm + gd must split the settings "
            f"{sorted(settings)} (given {sorted(given)})"
        )
    pick = lambda keys: {k: settings[k] for k in settings if k in keys}
    STAGES[(paper, group)] = dict(
        instance=dict(func=f"{problems}.instance_{group}", settings=pick(data)),
        svm=(
            dict(func=f"{problems}.svm_{group}", settings=pick(svm))
            if svm_stage
            else None
        ),
    )
    for stage, entry in STAGES[(paper, group)].items():
        if entry is not None:
            entry["code"] = experiment_code(entry["func"], "scripts/stage.py")
    inputs = {"instance": stage_file(paper, group, "instance")}
    if svm_stage:
        inputs["svm"] = stage_file(paper, group, "svm")
    register_compute(
        paper,
        group,
        figures,
        f"{trajectories}.trajectories_{group}",
        inputs=inputs,
        **resources,
    )


def _stage(wildcards, stage):
    entry = STAGES[(wildcards.paper, wildcards.group)][stage]
    if entry is None:
        raise WorkflowError(f"{wildcards.paper} {wildcards.group} has no {stage} stage")
    return entry


rule instance:
    input:
        code=lambda wildcards: _stage(wildcards, "instance")["code"],
    output:
        "results/stages/{paper}/{group}.instance.npz",
    log:
        "results/logs/{paper}_instance_{group}.log",
    conda:
        "../../environment.yml"
    params:
        func=lambda wildcards: _stage(wildcards, "instance")["func"],
        settings=lambda wildcards: _stage(wildcards, "instance")["settings"],
        preset=SCALE,
    script:
        "../../scripts/stage.py"


rule svm:
    input:
        instance="results/stages/{paper}/{group}.instance.npz",
        code=lambda wildcards: _stage(wildcards, "svm")["code"],
    output:
        "results/stages/{paper}/{group}.svm.npz",
    log:
        "results/logs/{paper}_svm_{group}.log",
    conda:
        "../../environment.yml"
    params:
        func=lambda wildcards: _stage(wildcards, "svm")["func"],
        settings=lambda wildcards: _stage(wildcards, "svm")["settings"],
        preset=SCALE,
    script:
        "../../scripts/stage.py"
