"""The suite's parallel workers keep every session set-up made once (tests/conftest.py)."""

from conftest import SHARED_SETUP_MODULES, SHARED_SETUPS, worker_group


def test_every_module_asking_for_a_shared_set_up_runs_on_its_worker(request):
    """A module whose tests ask for a session set-up by name is in the table, under that set-up:
    otherwise a second worker would make the set-up again (the end-to-end run: ≈ 9 min)."""
    for item in request.session.items:
        for setup in SHARED_SETUPS:
            if setup in getattr(item, "fixturenames", ()):
                assert worker_group(item.nodeid) == setup, (item.nodeid, setup)


def test_the_table_names_existing_modules_and_known_set_ups(request):
    root = request.config.rootpath
    for module, setup in SHARED_SETUP_MODULES.items():
        assert (root / module).is_file(), module
        assert setup in SHARED_SETUPS, (module, setup)


def test_a_module_is_its_own_group_unless_it_shares_a_set_up():
    assert worker_group("tests/unit/test_svm.py::test_x[1]") == "tests/unit/test_svm.py"
    assert worker_group("tests/integration/test_resume.py::test_y") == "quick_run"
