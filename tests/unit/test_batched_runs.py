"""A batched training job (several sweep points run in turn by one process) keeps each finished
run's tables in its undeclared scratch folder, so that a job killed at a later run resumes after the
finished ones, and reuses them only for the same settings."""

import pandas as pd

from attnbias.workflow import drop_run_state, finished_tables, keep_finished_tables

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
