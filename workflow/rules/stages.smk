# The table of the stages of the synthetic figure groups, read by the rules `instance` (the data:
# results/stages/{paper}/{group}.instance.npz) → `svm` (its max-margin solutions:
# results/stages/{paper}/{group}.svm.npz) → `compute` (the GD trajectories, the plot-ready
# results/data/{paper}/{group}.{csv,json}), written once in figures.smk.  One table entry per group
# (`register_stages`, in the paper files) names its three functions and which of its settings
# (config[paper][group]) each stage takes, so a GD setting (steps, lr) reruns the trajectories only.
# Groups drawn from the same data (`data_of`) with the same data and SVM settings share one
# instance and one SVM solution: computed once, read by every group that uses them.

# (paper, group) -> the stage entry: rules `instance` and `svm` (the groups that own stage files).
STAGES = {}
# (paper, group) -> the group whose stage files it reads (itself, or the group it shares them with)
STAGE_OWNER = {}


def stage_file(paper, group, stage):
    """The .npz a stage writes (attnbias.io.save_arrays): ``stage`` is "instance" or "svm"."""
    return f"{RESULTS}/stages/{paper}/{group}.{stage}.npz"


def register_stages(
    paper,
    group,
    figures,
    family,
    data,
    svm,
    gd,
    problems=None,
    data_of=None,
    **resources,
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
    only theirs, so a GD setting reruns the trajectories only.  ``data_of``: a group registered
    before whose data this group draws (its ``instance_<data_of>`` and ``svm_<data_of>``); when
    the data and SVM settings of both are equal the two share their stage files, else this group
    gets its own.  ``resources``: those of :func:`register_compute` for the `compute` job.
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
    source = data_of or group
    entry = dict(
        instance=dict(func=f"{problems}.instance_{source}", settings=pick(data)),
        svm=(
            dict(func=f"{problems}.svm_{source}", settings=pick(svm))
            if svm_stage
            else None
        ),
    )
    owner = STAGE_OWNER.get((paper, data_of), group) if data_of else group
    if owner == group or _without_code(STAGES[(paper, owner)]) != entry:
        owner = group
        STAGES[(paper, group)] = entry
        for stage in entry.values():
            if stage is not None:
                stage["code"] = experiment_code(stage["func"])
    STAGE_OWNER[(paper, group)] = owner
    inputs = {"instance": stage_file(paper, owner, "instance")}
    if svm_stage:
        inputs["svm"] = stage_file(paper, owner, "svm")
    register_compute(
        paper,
        group,
        figures,
        f"{family}.trajectories_{group}",
        inputs=inputs,
        **resources,
    )


def _without_code(entry):
    return {
        k: None if e is None else {n: v for n, v in e.items() if n != "code"}
        for k, e in entry.items()
    }


def _stage(wildcards, stage):
    entry = STAGES[(wildcards.paper, wildcards.group)][stage]
    if entry is None:
        raise WorkflowError(f"{wildcards.paper} {wildcards.group} has no {stage} stage")
    return entry
