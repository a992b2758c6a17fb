"""The pipeline's contract: each stage's `dvc.yaml` deps list exactly the `unseen` modules it runs (its import
closure), so that editing a module reruns every stage that uses it and no other; params.yaml has one copy of each
setting (no YAML aliases), so that `dvc exp run -S KEY=VALUE` reaches the stages that read it."""
import ast, json, tomllib
from pathlib import Path

import pytest
import yaml

from pipeline_helpers import BIN, _copy_working_tree, _run, _smoke_params

ROOT = Path(__file__).parents[1]
PACKAGE = "unseen"


def unseen_imports(source: str) -> set:
    "Modules of `unseen` that `source` imports anywhere (at the top or inside a function), by name."
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith(PACKAGE + ".")}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module == PACKAGE or module.startswith(PACKAGE + "."):  # relative imports are inside unseen
                inner = module if node.level else module.removeprefix(PACKAGE).lstrip(".")
                if inner: found.add(inner.split(".")[0])
                else: found |= {a.name for a in node.names}  # `from unseen import train` / `from . import train`
    return {m for m in found if (ROOT / PACKAGE / f"{m}.py").exists()}


def notebook_source(path: Path) -> str:
    "The code cells of a notebook as one Python source, IPython magics and shell lines left out."
    cells = [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
             for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    return "\n".join(l for cell in cells for l in cell.splitlines() if not l.lstrip().startswith(("%", "!")))


def closure(modules) -> set:
    "`modules` and every `unseen` module they import, directly or not."
    seen, todo = set(), list(modules)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += unseen_imports((ROOT / PACKAGE / f"{m}.py").read_text())
    return seen


def stage_modules(stage: dict) -> set:
    "The import closure of a stage: the module of its command (`unseen-stage` -> unseen.pipeline) and its notebook."
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    command, *args = stage["cmd"].split()
    assert command in scripts, f"{stage['cmd']!r}: not one of the project's commands {sorted(scripts)}"
    entry = scripts[command].split(":")[0].removeprefix(PACKAGE + ".")
    notebook = ROOT / "nbs" / "stages" / f"{args[0]}.ipynb"
    return closure({entry} | unseen_imports(notebook_source(notebook)))


def test_the_import_scanner_sees_every_form():
    src = "import unseen.train\nfrom unseen.logic import X\nfrom unseen import tokens\nfrom .model import M\n" \
          "def f():\n    from unseen.evaluate import g\nimport numpy\nfrom unseen.nope import z\n"
    assert unseen_imports(src) == {"train", "logic", "tokens", "model", "evaluate"}
    assert {"tokens", "datasets", "logic", "model", "interventions", "train"} <= closure({"train"})


def test_the_package_init_imports_nothing():
    "Importing any module runs unseen/__init__.py; it holds the version only, so no stage lists it."
    assert not unseen_imports((ROOT / PACKAGE / "__init__.py").read_text())


def test_dvc_yaml_deps_are_each_stages_import_closure():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    wrong = {}
    for name, stage in stages.items():
        listed = {d for d in stage.get("deps", []) if d.startswith(PACKAGE + "/")}
        needed = {f"{PACKAGE}/{m}.py" for m in stage_modules(stage)}
        notebook = f"nbs/stages/{stage['cmd'].split()[1]}.ipynb"
        if listed != needed or notebook not in stage.get("deps", []):
            wrong[name] = {"missing": sorted(needed - listed) + ([notebook] if notebook not in stage.get("deps", []) else []),
                           "not imported": sorted(listed - needed)}
    assert not wrong, f"dvc.yaml deps differ from the stages' import closures: {wrong}"


@pytest.mark.parametrize("name", ["params.yaml", "params-paper.yaml"])
def test_params_have_no_yaml_aliases(name):
    "An alias is a second copy that DVC writes back on `-S`, and a stage reading the copy misses the override."
    events = list(yaml.parse((ROOT / name).read_text()))
    assert not [e for e in events if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)], name


@pytest.mark.slow
def test_an_override_of_a_nested_experiment_key_reruns_that_training(tmp_path):
    _copy_working_tree(tmp_path)
    # as in params.yaml, the experiment sets its own steps (a nested key that -S replaces)
    _smoke_params(tmp_path, extra={"train": {"experiments": {"standard": {"variant": "standard", "training": {"steps": 20}}}}})
    dvc = lambda *args: _run([str(BIN / "dvc"), *args], tmp_path)
    stage = "train@standard-0"  # the matrix cell: experiment standard, seed 0 (outputs in runs/train/standard-s0)
    r = dvc("repro", stage)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = lambda: int((tmp_path / "runs/train/standard-s0/log.csv").read_text().splitlines()[-1].split(",")[0])
    smoke_steps = steps()
    assert smoke_steps == 20
    r = dvc("exp", "run", "-S", f"train.experiments.standard.training.steps={smoke_steps + 10}", stage)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"Running stage '{stage}'" in r.stdout, r.stdout  # the stage saw its parameter change...
    assert steps() == smoke_steps + 10  # ...and trained that many steps
    lock = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]
    assert lock[stage]["params"]["params.yaml"]["train.experiments.standard"]["training"]["steps"] == smoke_steps + 10
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())  # one copy of the setting, which DVC wrote back
    assert params["train"]["experiments"]["standard"]["training"]["steps"] == smoke_steps + 10
    figures = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]["figures"]
    assert "train.experiments" in figures["params"]  # the figures stage reads the same copy


def code_lines(path: Path) -> int:
    "Non-blank lines of a notebook's code cells that are not comments."
    return sum(1 for line in notebook_source(path).splitlines() if line.strip() and not line.strip().startswith("#"))


def test_stage_notebooks_are_thin():
    "A stage is its parameters, a few library calls and its outputs; what it computes lives, with its lessons, in nbs/."
    thick = {p.name: n for p in sorted((ROOT / "nbs" / "stages").glob("*.ipynb")) if (n := code_lines(p)) > 40}
    assert not thick, f"stage notebooks over 40 code lines (move the logic into a library notebook): {thick}"


@pytest.mark.slow
def test_an_experiment_with_a_new_dataset_reruns_no_other_training(tmp_path):
    "Each train and evaluate cell depends on its experiment's dataset manifest, not on the whole of runs/data."
    _copy_working_tree(tmp_path)
    one = {"standard": {"variant": "standard"}}
    _smoke_params(tmp_path, extra={"train": {"experiments": one}})
    dvc = lambda *args: _run([str(BIN / "dvc"), *args], tmp_path)
    r = dvc("repro", "evaluate@standard-0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    manifest = tmp_path / "runs/data/for/standard.json"
    before = manifest.read_bytes()
    # a new experiment on a size no other experiment uses: a new dataset (n50) and its manifest
    _smoke_params(tmp_path, extra={"train": {"experiments": {**one, "freeze-n50": {"variant": "freeze", "n_train": 50}}}})
    r = dvc("repro", "evaluate@freeze-n50-0", "evaluate@standard-0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Running stage 'generate'" in r.stdout and "Running stage 'train@freeze-n50-0'" in r.stdout, r.stdout
    assert "Running stage 'train@standard-0'" not in r.stdout and "Running stage 'evaluate@standard-0'" not in r.stdout, r.stdout
    assert manifest.read_bytes() == before
    assert json.loads((tmp_path / "runs/data/for/freeze-n50.json").read_text())["dataset"] == "n50"
    assert (tmp_path / "runs/data/n50/train.safetensors").exists()
    assert json.loads((tmp_path / "runs/train/freeze-n50-s0/metrics.json").read_text())["n_train"] == 50
