"""A batched training job (several sweep points run in turn by one process) keeps each finished
run's tables in its undeclared scratch folder, so that a job killed at a later run resumes after the
finished ones, and reuses them only for the same settings.  Its run files lie in the job's folder,
where the gathers find them."""

import pandas as pd
import pytest

from attnbias.io import save_data
from attnbias.runs import (
    drop_run_state,
    finished_tables,
    keep_finished_tables,
    run_file,
    run_files,
)

SETTINGS = {"optimizer": "sgd", "lr": 0.1, "grid": [1, 2], "control": "none"}


def _tables():
    df = pd.DataFrame({"step": [0, 4], "train_loss": [1.0986122886681098, 0.123456789012345678]})
    meta = {"columns": {"step": "s", "train_loss": "l"}, "settings": dict(SETTINGS)}
    return {"csv": (df, meta)}


def test_kept_tables_come_back_bit_for_bit_for_the_same_settings(tmp_path):
    folder = tmp_path / "run" / "finished"
    assert finished_tables(folder, SETTINGS) is None  # nothing kept yet: the run trains
    keep_finished_tables(folder, SETTINGS, _tables(), preset="quick")
    back = finished_tables(folder, dict(SETTINGS))
    assert list(back) == ["csv"]
    df, meta = back["csv"]
    pd.testing.assert_frame_equal(df, _tables()["csv"][0], check_exact=True)
    assert meta["settings"] == SETTINGS and meta["provenance"]["preset"] == "quick"
    assert not (tmp_path / "run" / "finished.tmp").exists()


def test_kept_tables_of_other_settings_are_not_reused(tmp_path):
    folder = tmp_path / "finished"
    keep_finished_tables(folder, SETTINGS, _tables(), preset="quick")
    assert finished_tables(folder, dict(SETTINGS, lr=0.3)) is None
    assert finished_tables(folder, dict(SETTINGS, control="null")) is None


def test_a_half_written_folder_is_never_read_and_dropping_clears_the_run(tmp_path):
    folder = tmp_path / "finished"
    folder.mkdir()
    _tables()["csv"][0].to_csv(folder / "csv.csv", index=False)  # no settings mark: killed mid-way
    assert finished_tables(folder, SETTINGS) is None
    keep_finished_tables(folder, SETTINGS, _tables(), preset="quick")
    ckpt = tmp_path / "checkpoint.pt"
    ckpt.write_bytes(b"x")
    drop_run_state(ckpt, folder)
    assert not ckpt.exists() and not folder.exists()
    drop_run_state(ckpt, folder)  # idempotent


def test_a_reused_run_is_written_byte_for_byte_as_when_it_finished(tmp_path):
    df, meta = _tables()["csv"]
    df = pd.DataFrame({"step": [0, 1, 2], "x": [0.1 + 0.2, 1 / 3, 2.0**-1074]})
    meta = dict(meta, columns={"step": "s", "x": "x"})
    save_data(df, meta, tmp_path / "fresh.csv", preset="quick")
    keep_finished_tables(tmp_path / "finished", SETTINGS, {"csv": (df, meta)}, preset="quick")
    back_df, back_meta = finished_tables(tmp_path / "finished", SETTINGS)["csv"]
    save_data(back_df, back_meta, tmp_path / "reused.csv", preset="quick")
    assert (tmp_path / "reused.csv").read_bytes() == (tmp_path / "fresh.csv").read_bytes()


def test_run_files_are_found_in_the_batch_folders_in_the_gathered_order(tmp_path):
    a, b = tmp_path / "optsgd", tmp_path / "optadamw"
    assert run_file(a, "optsgd_lr0.1") == a / "optsgd_lr0.1.csv"
    assert run_file(a, "seed0", "fig6") == a / "seed0_fig6.csv"
    for folder, label in [(a, "optsgd_lr0.1"), (a, "optsgd_lr0.3"), (b, "optadamw_lr0.1")]:
        folder.mkdir(exist_ok=True)
        run_file(folder, label).write_text("x\n1\n")
    stems = ["optadamw_lr0.1", "optsgd_lr0.3", "optsgd_lr0.1"]
    assert run_files([a, b], stems) == [str(run_file(b, stems[0])), str(run_file(a, stems[1])),
                                        str(run_file(a, stems[2]))]  # fmt: skip
    with pytest.raises(FileNotFoundError, match="optsgd_lr9"):
        run_files([a, b], ["optsgd_lr9"])

