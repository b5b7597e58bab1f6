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


RULES = [*TARGETS, "robustness", "robustness_nucnorm", "robustness_config", "train", "compare"]


def test_first_notes_name_an_unknown_target_and_nothing_for_a_known_one():
    lines = hints.first_notes(["maxmargin_fig1"], [], RULES, [1, 2], named=TARGETS)
    assert lines == hints.unknown_target("maxmargin_fig1", TARGETS).splitlines()
    assert hints.first_notes(["maxmargin_fig1c", "all"], ["seed=1"], RULES, [1, 2]) == []
    assert hints.first_notes([], None, RULES, [1, 2]) == []
    # files (a folder in the path) and the Snakefile are no bare words: Snakemake judges them
    files = ["results/claims/maxmargin/fig1c.json", "Snakefile", "fig1.pdf"]
    assert hints.first_notes(files, [], RULES, [1]) == []


class _Estimates:
    """Stands in for attnbias.estimates.RunEstimates (tests/unit/test_estimates.py tests it)."""

    def robustness(self, seeds, cores, papers=None):
        where = "" if papers is None else f" of {', '.join(papers)}"
        return f"{len(seeds)} seeds{where} on {cores} cores (measured at commit abc1234)"

    def compare(self, cores):
        return f"2 figures on {cores} cores (measured at commit abc1234)"

    def control(self, cores):
        return f"12 figures on {cores} cores (measured at commit abc1234)"


def test_robustness_and_the_control_state_their_cost_once():
    (line,) = hints.first_notes(["robustness", "robustness_nucnorm"], [], RULES, [1, 2, 3, 4])
    assert line == hints.robustness_note([1, 2, 3, 4])
    assert line.startswith("robustness: each of the 4 seed shifts in robustness.seeds (1, 2, 3, 4)")
    assert "min" not in line  # no estimate without a measured table: no number from the past
    (line,) = hints.first_notes(["robustness"], [], RULES, [1, 2], estimates=_Estimates(), cores=4)
    assert line == hints.robustness_note([1, 2], "2 seeds on 4 cores (measured at commit abc1234)")
    (line,) = hints.first_notes(["robustness_nucnorm"], [], RULES, [1], estimates=_Estimates())
    assert "1 seeds of nucnorm on 2 cores" in line  # robustness_<paper>: that paper's figures
    assert hints.first_notes(["robustness_config"], [], RULES, [1]) == []
    for value in ("null", "~", "Null"):
        assert hints.first_notes(["all"], [f"control={value}"], RULES, [1]) == [hints.CONTROL_NOTE]
    (line,) = hints.first_notes(["all"], ["control=null"], RULES, [1], estimates=_Estimates())
    assert line == hints.CONTROL_NOTE + (
        "; its run: 12 figures on 2 cores (measured at commit abc1234)"
    )
    assert hints.first_notes(["all"], ["control=none"], RULES, [1]) == []
    assert "relabelled copies of the default run's, not trained" in hints.CONTROL_NOTE
    assert all("\n" not in s for s in (line, hints.CONTROL_NOTE))
    # compare of a seed shift says what it rebuilds; compare of the seed 0 run or without
    # estimates says nothing
    assert hints.first_notes(["compare"], ["seed=2"], RULES, [1], estimates=_Estimates()) == [
        hints.compare_note("2 figures on 2 cores (measured at commit abc1234)")
    ]
    assert hints.first_notes(["compare"], ["seed=0"], RULES, [1], estimates=_Estimates()) == []
    assert hints.first_notes(["compare"], ["seed=2"], RULES, [1]) == []


def test_the_command_line_is_read_as_snakemake_reads_it():
    argv = ["/venv/bin/snakemake", "-n", "--cores", "2", "robustness", "--config", "control=null"]
    lines = []

    class Out:
        def write(self, s):
            lines.append(s)

    said = hints.say_first(argv, RULES, [1, 2, 3, 4], stream=Out(), estimates=_Estimates())
    assert said == [hints.robustness_note([1, 2, 3, 4], _Estimates().robustness([1] * 4, 2)),
                    hints.control_note(_Estimates().control(2))]  # fmt: skip
    assert "".join(lines) == "\n".join(said) + "\n"
    # a seed run of the robustness target: claim files, `--config seed=N`, the control (if any)
    # in its config file: nothing said
    nested = ["/lib/python3.11/site-packages/snakemake/__main__.py",
              "results/seed-1/claims/nucnorm/p1.json", "--snakefile", "/wf/Snakefile",
              "--cores", "1", "--configfile", "results/robustness/config.yaml", "--config",
              "seed=1"]  # fmt: skip
    assert hints.command_line(nested).targets == ["results/seed-1/claims/nucnorm/p1.json"]
    assert hints.say_first(nested, RULES, [1], stream=Out()) == []
    # the API called from Python (pytest's argv) or a command line that does not parse: nothing
    assert hints.command_line(["/venv/bin/pytest", "robustness"]) is None
    assert hints.command_line(["snakemake", "--no-such-option"]) is None


def test_a_file_of_another_run_is_answered_with_the_settings_that_made_it(tmp_path, monkeypatch):
    from attnbias.hints import folder_settings

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "results/custom/maxmargin.fig1.steps-500"
    folder.mkdir(parents=True)
    (folder / "overrides.yaml").write_text(
        "overrides:\n  maxmargin.fig1.steps: {default: 1000, used: 500}\n"
    )
    target = "results/custom/maxmargin.fig1.steps-500/figures/maxmargin/fig1c.png"
    msg = folder_settings(target, "results")
    assert len(msg.splitlines()) == 3 and "maxmargin.fig1.steps = 500" in msg
    assert f"snakemake --cores 2 {target} --config maxmargin='{{fig1: {{steps: 500}}}}'" in msg
    assert folder_settings(target, "results/custom/maxmargin.fig1.steps-500") is None
    assert folder_settings("results/figures/maxmargin/fig1c.png", "results") is None
    seed = folder_settings("results/paper/seed-2/claims/x.json", "results")
    assert "--config scale=paper seed=2" in seed
    assert "is missing" in folder_settings("results/custom/other/x.png", "results")
