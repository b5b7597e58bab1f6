# The table of the stages of the synthetic figure groups, read by the rules `instance` (the data:
# results/stages/{paper}/{group}.instance.npz) → `svm` (its max-margin solutions:
# results/stages/{paper}/{group}.svm.npz) → `compute` (the GD trajectories, the plot-ready
# results/data/{paper}/{group}.{csv,json}), written once in figures.smk.  One table entry per group
# (`register_stages`, in the paper files) names its three functions; which of its settings
# (config[paper][group]) each stage takes is read from their signatures, so a GD setting (steps,
# lr) reruns the trajectories only.
# Groups drawn from the same data (`data_of`) with the same data and SVM settings share one
# instance and one SVM solution: computed once, read by every group that uses them.

from attnbias.closure import function_parameters

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
    problems=None,
    data_of=None,
    **resources,
):
    """Register a synthetic group as three stages, functions of attnbias.experiments.<family>
    (the first two of ``problems`` instead, where given):

    * ``instance_<group>(**data settings) -> (arrays, doc)``: the `instance` job;
    * ``svm_<group>(instance, **svm settings) -> (arrays, doc)``: the `svm` job (a group whose
      module defines no ``svm_<group>`` has no SVM stage);
    * ``trajectories_<group>(instance, svm, **settings) -> (df, meta)``: the `compute` job, with
      all the group's settings (its sidecar records them).

    Which settings of config[paper][group] each stage takes is read from the signatures of
    ``instance_<group>`` and ``svm_<group>`` (:func:`attnbias.closure.function_parameters`, a
    static read of their module); the rest are the trajectories' own.  The `instance` and `svm`
    jobs get only theirs, so a GD setting reruns the trajectories only.  ``data_of``: a group
    registered before whose data this group draws (its ``instance_<data_of>`` and
    ``svm_<data_of>``); when the data and SVM settings of both are equal the two share their stage
    files, else this group gets its own.  ``resources``: those of :func:`register_compute` for the
    `compute` job.
    """
    settings = config[paper][group]
    problems = problems or family
    source = data_of or group
    data = stage_parameters(paper, group, f"{problems}.instance_{source}", 0)
    svm = stage_parameters(paper, group, f"{problems}.svm_{source}", 1)
    if data is None:
        raise WorkflowError(f"{paper} {group}: {problems} defines no instance_{source}")
    if svm and set(svm) & set(data):
        raise WorkflowError(
            f"{paper} {group}: instance_{source} and svm_{source} both take "
            f"{sorted(set(svm) & set(data))}: each setting belongs to one stage"
        )
    pick = lambda keys: {k: settings[k] for k in settings if k in keys}
    entry = dict(
        instance=dict(func=f"{problems}.instance_{source}", settings=pick(data)),
        svm=(
            dict(func=f"{problems}.svm_{source}", settings=pick(svm))
            if svm is not None
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
    if svm is not None:
        inputs["svm"] = stage_file(paper, owner, "svm")
    register_compute(
        paper,
        group,
        figures,
        f"{family}.trajectories_{group}",
        inputs=inputs,
        **resources,
    )


def stage_parameters(paper, group, func, skip):
    """The settings a stage function ``attnbias.experiments.<func>`` takes (its parameters after
    the first ``skip``, which are earlier stages' results), or None if its module defines none;
    each must be a setting of config[paper][group] (its schema block)."""
    names = function_parameters(f"experiments.{func}", workflow.basedir)
    if names is None:
        return None
    unknown = sorted(set(names[skip:]) - set(config[paper][group]))
    if unknown:
        raise WorkflowError(
            f"{func} takes {unknown}, which are not settings of {paper}.{group} "
            f"(workflow/schemas/{paper}.schema.yaml)"
        )
    return names[skip:]


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
