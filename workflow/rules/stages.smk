# The stages of the synthetic figure groups, read by the rules `instance` (the data:
# results/stages/{paper}/{group}.instance.npz) → `svm` (its max-margin solutions:
# results/stages/{paper}/{group}.svm.npz) → `compute` (the GD trajectories, the plot-ready
# results/data/{paper}/{group}.{csv,json}), written once in figures.smk.  The groups are entries
# of the figure table (attnbias.table.stages.STAGED_GROUPS: figures, functions, shared data);
# which of its settings (config[paper][group]) each stage takes is read from their signatures.
# Groups drawn from the same data (`data_of`) with the same data and SVM settings share one
# instance and one SVM solution: computed once, read by every group that uses them.

from attnbias.table.stages import STAGED_GROUPS, stage_settings

# (paper, group) -> the stage entry: rules `instance` and `svm` (the groups that own stage files).
STAGES = {}
# (paper, group) -> the group whose stage files it reads (itself, or the group it shares them with)
STAGE_OWNER = {}


def stage_file(paper, group, stage):
    """The .npz a stage writes (attnbias.io.save_arrays): ``stage`` is "instance" or "svm"."""
    return f"{RESULTS}/stages/{paper}/{group}.{stage}.npz"


def register_staged_groups(paper):
    """Register ``paper``'s synthetic groups of the figure table (attnbias.table.stages): for each,
    the `instance` and `svm` jobs (only their own settings, read from their functions'
    signatures: a GD setting reruns the trajectories only) and the `compute` job of its
    trajectories, with every setting.  A group drawn from another's data (``data_of``) with the
    same data and SVM settings shares that group's stage files."""
    for group in (g for g in STAGED_GROUPS if g.paper == paper):
        settings = config[paper][group.group]
        try:
            data, svm = stage_settings(group, settings, workflow.basedir)
        except ValueError as e:
            raise WorkflowError(str(e)) from None
        entry = dict(
            instance=dict(func=group.instance_func, settings=data),
            svm=None if svm is None else dict(func=group.svm_func, settings=svm),
        )
        name, data_of = group.group, group.data_of
        owner = STAGE_OWNER.get((paper, data_of), name) if data_of else name
        if owner == name or _without_code(STAGES[(paper, owner)]) != entry:
            owner = name
            STAGES[(paper, name)] = entry
            for stage in entry.values():
                if stage is not None:
                    stage["code"] = experiment_code(stage["func"])
        STAGE_OWNER[(paper, name)] = owner
        inputs = {"instance": stage_file(paper, owner, "instance")}
        if svm is not None:
            inputs["svm"] = stage_file(paper, owner, "svm")
        register_compute(
            paper,
            name,
            group.figures,
            group.trajectories_func,
            inputs=inputs,
            **group.resources,
        )


def _without_code(entry):
    return {
        k: None if e is None else {n: v for n, v in e.items() if n != "code"}
        for k, e in entry.items()
    }


def _instance(wildcards):
    return _stage(wildcards, "instance")


def _svm(wildcards):
    return _stage(wildcards, "svm")


def _stage(wildcards, stage):
    entry = STAGES[(wildcards.paper, wildcards.group)][stage]
    if entry is None:
        raise WorkflowError(f"{wildcards.paper} {wildcards.group} has no {stage} stage")
    return entry
