"""The messages of attnbias.hints, on their own: unknown targets, cluster profiles with unfilled
placeholders, and the CUDA probe."""

from types import SimpleNamespace

from attnbias import hints

TARGETS = ["all", "maxmargin", "maxmargin_fig1a", "maxmargin_fig1b", "maxmargin_fig1c",
           "maxmargin_fig10", "lowrank_figA", "nucnorm_p1"]  # fmt: skip


def test_unknown_target_names_what_it_starts_ends_or_resembles():
    msg = hints.unknown_target("maxmargin_fig1", TARGETS)
    head = msg.splitlines()[0]
    assert head == (
        "maxmargin_fig1 is not a target; the targets starting with it: maxmargin_fig10, "
        "maxmargin_fig1a, maxmargin_fig1b, maxmargin_fig1c."
    )
    assert "did you mean maxmargin_fig1c?" in hints.unknown_target("fig1c", TARGETS)
    assert "did you mean lowrank_figA?" in hints.unknown_target("lowrank_figa", TARGETS)
    assert hints.unknown_target("zzz", TARGETS).startswith("zzz is not a target of this workflow.")
    assert len(msg.splitlines()) == 2 and "--list-target-rules" in msg


class _Res:
    def __init__(self, raw):
        self.raw = raw


def test_placeholders_are_found_in_default_and_rule_resources():
    settings = SimpleNamespace(
        default_resources={"slurm_account": _Res("YOUR_ACCOUNT"), "mem_mb": _Res(2000)},
        overwrite_resources={"train": {"slurm_partition": _Res("YOUR_GPU_PARTITION")}},
    )
    found = hints.resource_placeholders(settings)
    assert found == {"YOUR_ACCOUNT": ["slurm_account"],
                     "YOUR_GPU_PARTITION": ["train:slurm_partition"]}  # fmt: skip
    filled = SimpleNamespace(default_resources={"slurm_account": _Res("abc")},
                             overwrite_resources={})  # fmt: skip
    assert hints.resource_placeholders(filled) == {}
    line = hints.placeholder_message(found, "profiles/x/config.yaml", dry_run=False)
    assert line.startswith("profiles/x/config.yaml: unfilled placeholders YOUR_ACCOUNT, ")
    assert "\n" not in line
    assert "a real run stops here" in hints.placeholder_message(found, None, dry_run=True)


def test_the_profile_file_comes_from_the_command_line_or_the_environment(tmp_path):
    (tmp_path / "profiles" / "mine").mkdir(parents=True)
    (tmp_path / "profiles" / "default").mkdir(parents=True)
    argv = ["snakemake", "--workflow-profile", "profiles/mine", "-n"]
    assert hints.profile_file(argv, {}, tmp_path) == str(tmp_path / "profiles/mine/config.yaml")
    argv = ["snakemake", "--profile=profiles/mine"]
    assert hints.profile_file(argv, {}, tmp_path).endswith("profiles/mine/config.yaml")
    env = {"SNAKEMAKE_PROFILE": str(tmp_path / "profiles" / "mine")}
    assert hints.profile_file(["snakemake"], env, tmp_path).endswith("mine/config.yaml")
    assert hints.profile_file(["snakemake"], {}, tmp_path).endswith("default/config.yaml")
    assert hints.profile_file(["snakemake", "--workflow-profile", "none"], {}, tmp_path) is None


def test_an_emptied_cuda_visible_devices_means_no_gpu():
    assert hints.local_cuda({"CUDA_VISIBLE_DEVICES": ""}) is False
    assert hints.local_cuda({"CUDA_VISIBLE_DEVICES": "-1"}) is False
