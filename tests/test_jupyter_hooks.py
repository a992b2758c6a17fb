"""Saving a notebook in JupyterLab leaves it clean: nbdev's pre-save hook (pyproject.toml [tool.nbdev] jupyter_hooks,
.jupyter/jupyter_server_config.py) strips what JupyterLab adds, so the save is byte for byte what nbdev-clean keeps."""
import shutil
import tomllib
from pathlib import Path

import pytest
from jupyter_server.services.contents.filemanager import FileContentsManager
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]


def _config() -> Config:
    "The config JupyterLab reads from .jupyter/ (JUPYTER_CONFIG_PATH=.jupyter, as the README starts it)."
    c = Config()
    exec((ROOT / ".jupyter/jupyter_server_config.py").read_text(), {"c": c})
    return c


def _as_jupyterlab_leaves_it(nb):
    "What opening, running and saving a notebook in JupyterLab adds: kernel and language info, execution counts and timings, view state."
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.9", "codemirror_mode": {"name": "ipython", "version": 3},
                                    "file_extension": ".py", "mimetype": "text/x-python", "pygments_lexer": "ipython3"}
    for k, cell in enumerate(nb.cells):
        cell.metadata["jupyter"] = {"source_hidden": False}
        if cell.cell_type == "code":
            cell.execution_count = k + 1
            cell.metadata["execution"] = {"iopub.execute_input": "2026-12-06T07:00:00.000Z", "shell.execute_reply": "2026-12-06T07:00:01.000Z"}
            cell.metadata["scrolled"] = True
            for out in cell.outputs:
                if "execution_count" in out: out["execution_count"] = k + 1
    return nb


def test_the_hook_is_on():
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["nbdev"]["jupyter_hooks"] is True
    assert _config().ContentsManager.pre_save_hook == "nbdev.clean.clean_jupyter"


@pytest.mark.parametrize("name", ["nbs/00b_figure_files.ipynb", "nbs/06_lemma.ipynb", "nbs/stages/results.ipynb"])
def test_a_save_in_jupyterlab_is_the_committed_notebook(tmp_path, monkeypatch, name):
    for f in ("pyproject.toml", name): (tmp_path / f).parent.mkdir(parents=True, exist_ok=True); shutil.copy(ROOT / f, tmp_path / f)
    monkeypatch.chdir(tmp_path)   # JupyterLab runs from the repository root; nbdev finds pyproject.toml from there
    manager = FileContentsManager(config=_config(), root_dir=str(tmp_path))
    model = manager.get(name)
    model["content"] = _as_jupyterlab_leaves_it(model["content"])
    manager.save({"type": "notebook", "format": "json", "content": model["content"]}, name)
    assert (tmp_path / name).read_text() == (ROOT / name).read_text()
    if name == "nbs/stages/results.ipynb":   # papermill's `parameters` tag survives the save
        assert '"parameters"' in (tmp_path / name).read_text()


def test_without_the_hook_the_save_is_not_clean(tmp_path, monkeypatch):
    "The check above can fail: the same save with no hook keeps what JupyterLab added."
    name = "nbs/00b_figure_files.ipynb"
    for f in ("pyproject.toml", name): (tmp_path / f).parent.mkdir(parents=True, exist_ok=True); shutil.copy(ROOT / f, tmp_path / f)
    monkeypatch.chdir(tmp_path)
    manager = FileContentsManager(root_dir=str(tmp_path))
    model = manager.get(name)
    manager.save({"type": "notebook", "format": "json", "content": _as_jupyterlab_leaves_it(model["content"])}, name)
    assert "language_info" in (tmp_path / name).read_text()
