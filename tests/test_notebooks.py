"""Every library notebook runs top to bottom: its lesson cells are tests too."""
from pathlib import Path

import pytest
from nbdev.test import test_nb as run_notebook_tests

NBS = Path(__file__).parents[1] / "nbs"
LIBRARY = sorted(p.name for p in NBS.glob("[0-9]*.ipynb"))


def test_there_are_library_notebooks():
    assert "00_logic.ipynb" in LIBRARY


@pytest.mark.parametrize("name", LIBRARY)
def test_lesson_cells_pass(name, monkeypatch):
    monkeypatch.chdir(NBS)
    ok, seconds = run_notebook_tests(NBS / name, do_print=False)
    assert ok, f"{name}: a cell failed (run it in JupyterLab or `nbdev-test --path nbs/{name}` to see which)"
