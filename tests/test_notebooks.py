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
    assert ok, f"{name}: a cell failed (run it in JupyterLab or `nbdev-test --fname nbs/{name}` to see which)"


def test_nbdev_test_skips_the_stage_notebooks():
    "Plain `nbdev-test` runs the library notebooks only: a stage notebook writes pipeline outputs where it runs."
    from nbdev.test import _keep_file
    assert not _keep_file(NBS / "stages" / "train.ipynb", ".notest") and _keep_file(NBS / "00_logic.ipynb", ".notest")


def test_the_notebook_check_finds_an_error_output(tmp_path, monkeypatch):
    "tools/render_notebooks.py --check (a CI gate): an error output in a library notebook, any output in a stage notebook."
    import importlib.util, json
    spec = importlib.util.spec_from_file_location("render_notebooks", NBS.parent / "tools" / "render_notebooks.py")
    tool = importlib.util.module_from_spec(spec); spec.loader.exec_module(tool)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    cell = lambda outputs: {"cell_type": "code", "id": "c1", "metadata": {}, "source": [], "execution_count": None, "outputs": outputs}
    error = {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []}
    printed = {"output_type": "stream", "name": "stdout", "text": ["3\n"]}
    for name, outputs in (("lib.ipynb", [error]), ("ok.ipynb", [printed]), ("stage.ipynb", [printed])):
        (tmp_path / name).write_text(json.dumps({"cells": [cell(outputs)], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert "holds an error output (ValueError: bad)" in tool.problems(tmp_path / "lib.ipynb", stage=False)[0]
    assert tool.problems(tmp_path / "ok.ipynb", stage=False) == []
    assert "has outputs" in tool.problems(tmp_path / "stage.ipynb", stage=True)[0]
