# The table of the stages of the synthetic figure groups, read by the rules `instance` (the data:
# results/stages/{paper}/{group}.instance.npz) → `svm` (its max-margin solutions:
# results/stages/{paper}/{group}.svm.npz) → `compute` (the GD trajectories, the plot-ready
# results/data/{paper}/{group}.{csv,json}), written once in figures.smk.  One table entry per group
# (`register_stages`, in the paper files) names its three functions and which of its settings
# (config[paper][group]) each stage takes, so a GD setting (steps, lr) reruns the trajectories only.

# (paper, group) -> the stage entry: rules `instance` and `svm`.
STAGES = {}


def stage_file(paper, group, stage):
    """The .npz a stage writes (attnbias.io.save_arrays): ``stage`` is "instance" or "svm"."""
    return f"{RESULTS}/stages/{paper}/{group}.{stage}.npz"


def register_stages(
    paper, group, figures, family, data, svm, gd, problems=None, **resources
):
    """Register a synthetic group as three stages, functions of attnbias.experiments.<family>
    (the first two of ``problems`` instead, where given):

    * ``instance_<group>(**data settings) -> (arrays, doc)``: the `instance` job;
    * ``svm_<group>(instance, **svm settings) -> (arrays, doc)``: the `svm` job (``svm=None``: the
      group has no SVM stage, said here explicitly);
    * ``trajectories_<group>(instance, svm, **settings) -> (df, meta)``: the `compute` job, with
      all the group's settings (its sidecar records them).

    ``data``, ``svm``, ``gd``: the names of the settings of config[paper][group] each stage is
    about; together exactly the group's settings, each once.  The `instance` and `svm` jobs get
    only theirs, so a GD setting reruns the trajectories only.  ``resources``: those of
    :func:`register_compute` for the `compute` job.
    """
    settings = config[paper][group]
    problems = problems or family
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
            entry["code"] = experiment_code(entry["func"])
    inputs = {"instance": stage_file(paper, group, "instance")}
    if svm_stage:
        inputs["svm"] = stage_file(paper, group, "svm")
    register_compute(
        paper,
        group,
        figures,
        f"{family}.trajectories_{group}",
        inputs=inputs,
        **resources,
    )


def _stage(wildcards, stage):
    entry = STAGES[(wildcards.paper, wildcards.group)][stage]
    if entry is None:
        raise WorkflowError(f"{wildcards.paper} {wildcards.group} has no {stage} stage")
    return entry
