"""Bad input and faults: every parameter from params.yaml, one clear line naming the key, no stale outputs, one run at a time."""
import copy, json, os
from pathlib import Path

import pytest
import yaml

from unseen import pipeline
from unseen.pipeline import (check_matrix, dvc_stage, load_params, main, notebook_parameters, stage_parameters,
                             writing)

from pipeline_helpers import ROOT, _copy_working_tree, _smoke_params

PARAMS = load_params(ROOT / "params.yaml")


def _parameters(name, params=PARAMS, overrides=None):
    "Stage `name`'s papermill parameters from `params`, the way `unseen-stage` computes them."
    matrix = tuple(dvc_stage(name, ROOT).get("matrix") or ())
    if matrix: overrides = {"run": "standard", "seed": 0, **(overrides or {})}
    return stage_parameters(name, params, notebook_parameters(ROOT / f"nbs/stages/{name}.ipynb"), overrides, matrix)


def _first_line(argv) -> str:
    "The first line `unseen-stage` exits with for `argv` (it must exit)."
    with pytest.raises(SystemExit) as e:
        main(argv)
    return str(e.value.code).splitlines()[0]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    "A smoke-scale copy of the repository as the working directory."
    _copy_working_tree(tmp_path)
    _smoke_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DVC_STAGE", raising=False)
    return tmp_path


# 2. every declared parameter of a stage comes from params.yaml

@pytest.mark.parametrize("name", ["generate", "train", "evaluate", "results", "figures", "lemma", "gemma", "finetune"])
def test_every_parameter_of_the_stage_comes_from_params_yaml(name):
    got = _parameters(name)
    for key in notebook_parameters(ROOT / f"nbs/stages/{name}.ipynb"):
        assert key in got or key.endswith("_dir") or key in pipeline.RUN_SETTINGS, (name, key)


@pytest.mark.parametrize("name", ["generate", "train", "lemma", "gemma", "finetune"])
def test_a_deleted_key_or_a_null_section_stops_the_stage_naming_it(name):
    key = sorted(k for k in PARAMS[name] if not k.endswith("_dir"))[0]
    params = copy.deepcopy(PARAMS)
    del params[name][key]
    with pytest.raises(ValueError, match=f"params.yaml has no key {name}.{key}: add it"):
        _parameters(name, params)
    params[name] = None
    with pytest.raises(ValueError, match=f"params.yaml section '{name}' is None: it must be a mapping"):
        _parameters(name, params)


def test_generate_with_test_problems_deleted_fails_before_running(repo):
    params = yaml.safe_load(Path("params.yaml").read_text())
    del params["generate"]["test_problems"]
    Path("params.yaml").write_text(yaml.safe_dump(params))
    assert _first_line(["generate"]) == ("unseen-stage generate: params.yaml has no key generate.test_problems: "
                                         "add it (the notebook's default is for running it by hand only)")
    assert not Path("runs/data").exists() and not Path("runs/notebooks/generate.ipynb").exists()


# 3. dotted -p keys deep-merge; params section < experiment < command line

def test_a_dotted_override_keeps_the_rest_of_the_mapping_and_beats_the_experiment():
    params = copy.deepcopy(PARAMS)   # an experiment that sets its own steps
    params["train"]["experiments"]["standard"] = {"variant": "standard", "training": {"steps": 6000}}
    got = _parameters("train", params, overrides={"training.steps": 30})
    assert got["training"] == {**PARAMS["train"]["training"], "steps": 30}
    assert got["experiments"]["standard"]["training"]["steps"] == 30                # the command line wins
    merged = _parameters("train", params, overrides={"training": {"steps": 30}})   # a mapping value merges too
    assert merged["training"]["lr"] == PARAMS["train"]["training"]["lr"] and merged["training"]["steps"] == 30
    plain = _parameters("train", params)
    assert plain["training"]["steps"] == PARAMS["train"]["training"]["steps"]        # section < experiment
    assert plain["experiments"]["standard"]["training"]["steps"] == 6000


@pytest.mark.slow
def test_the_command_line_beats_the_experiment_in_a_real_run(repo):
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["train"]["experiments"]["standard"] = {"variant": "standard", "training": {"steps": 20, "log_every": 10,
                                                                                   "schedule": "cosine"}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    main(["generate"])
    main(["train", "-p", "run=standard", "-p", "training.steps=8", "-p", "training.log_every=4"])
    log = Path("runs/train/standard-s0/log.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in log[1:]] == ["0", "4", "8"]
    cells = json.loads(Path("runs/notebooks/train.ipynb").read_text())["cells"]
    injected = next("".join(c["source"]) for c in cells if "injected-parameters" in c["metadata"].get("tags", []))
    assert '"steps": 8' in injected and '"batch_size": 16' in injected   # the rest of train.training reached the notebook

    # 4. a failed run leaves no complete-looking results, old or new
    assert Path("runs/train/standard-s0/metrics.json").exists()
    assert "unseen-stage train: FileNotFoundError" in _first_line(["train", "-p", "run=standard", "-p", "data_dir=runs/nowhere"])
    assert not Path("runs/train/standard-s0").exists()
    assert not list(Path("runs/train").rglob("metrics.json")) and not list(Path("runs/models").glob("*.safetensors"))


@pytest.mark.slow
def test_a_run_by_hand_elsewhere_keeps_its_weights_beside_its_log(repo):
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["train"]["experiments"]["standard"] = {"variant": "standard", "training": {"steps": 4, "log_every": 2, "schedule": "cosine"}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    main(["generate"])
    main(["train", "-p", "run=standard", "-p", "out_dir=runs/mine", "--tag", "mine"])
    assert sorted(p.name for p in Path("runs/mine").iterdir()) == [".unseen-stage", "log.csv", "metrics.json", "standard-s0.safetensors",
                                                                   "training.png"]
    assert not Path("runs/models").exists()   # the pipeline's weights directory is untouched


# 4. a run by hand never overwrites what dvc.lock tracks

def _lock(stage_outs: dict):
    Path("dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {
        stage: {"cmd": "x", "outs": [{"path": p, "md5": "0" * 32} for p in outs]} for stage, outs in stage_outs.items()}}))


def test_a_run_by_hand_does_not_overwrite_dvc_tracked_outputs(repo, monkeypatch):
    _lock({"train@standard-0": ["runs/models/standard-s0.safetensors", "runs/notebooks/train-standard-s0.ipynb"],
           "generate": ["runs/data", "runs/notebooks/generate.ipynb"]})
    line = _first_line(["train", "-p", "run=standard", "-p", "seed=0", "--tag", "standard-s0"])
    assert "is an output of the DVC pipeline (dvc.lock): a run by hand does not overwrite it" in line, line
    assert "runs/data is an output" in _first_line(["generate", "--tag", "mine"])
    assert "runs/notebooks/generate.ipynb is an output" in _first_line(["generate", "-p", "out_dir=runs/mine"])
    assert "runs/models/standard-s0.safetensors" in _first_line(["train", "-p", "run=standard", "--tag", "try"])
    # elsewhere is fine: it gets as far as the notebook, which finds no data
    assert "no dataset at" in _first_line(["train", "-p", "run=standard", "-p", "out_dir=runs/mine", "--tag", "mine"])
    monkeypatch.setenv("DVC_STAGE", "train@standard-0")   # DVC's own call writes the tracked outputs
    assert "no dataset at" in _first_line(["train", "-p", "run=standard", "-p", "seed=0", "--tag", "standard-s0"])


# 5. one run at a time per output directory

def test_a_second_run_of_the_same_output_directory_is_refused(repo):
    with writing("runs/train/standard-s0", ".", "train", {"run": "standard", "seed": 0}):
        line = _first_line(["train", "-p", "run=standard"])
    assert line.startswith("unseen-stage train: another run is writing runs/train/standard-s0"), line
    assert "no dataset at" in _first_line(["train", "-p", "run=standard"])   # the lock went with the first run


# 7. types and ranges checked where they are defined; the message names the key and the fix

CASES = [  # stage, -p items, what the one line says
    ("train", ["seed=abc"], "-p seed='abc' (str): expected an integer"),
    ("train", ["seed=-1"], "-p seed=-1: must be at least 0"),
    ("generate", ["train_problems=abc"], "-p train_problems='abc' (str): expected an integer"),
    ("generate", ["test_problems=2.5"], "-p test_problems=2.5 (float): expected an integer"),
    ("train", ["training.lr='0.003'"], "train.training.lr='0.003' (str): expected a number; set it in params.yaml without quotes"),
    ("train", ["training.monitor_problems=0"], "train.training.monitor_problems=0: must be at least 1"),
    ("train", ["training.warmup=-5"], "train.training.warmup=-5: must be at least 0"),
    ("train", ["model.dropout=2"], "train.model.dropout=2: must be between 0 and 1"),
    ("train", ["run=reset", "intervention.reset_every=-1"], "train.intervention.reset_every=-1: must be at least 0"),
    ("generate", ["problem.n_vars=five"], "problem.n_vars='five' (str): expected an integer or a list"),
    ("results", ["metric=accuracy"], "results.metric='accuracy': expected one of ['answer', 'exact_match']"),
    ("figures", ["variants=[standard, copyy]"], "figures.variants: 'copyy' is not one of"),
    ("train", ["training={steps: 30"], "-p 'training={steps: 30': the value is not valid YAML"),
    ("train", ["training.steps.x=1"], "-p training.steps.x: training.steps is"),
    ("lemma", ["n_unseen=1"], "n_unseen=1: need at least 2 unseen classes"),
    ("gemma", ["models=[]"], "gemma.models is empty"),
]


@pytest.mark.slow
def test_bad_values_end_in_one_line_naming_the_key(repo):
    main(["generate"])
    for stage, items, message in CASES:
        argv = [stage] + (["-p", "run=standard"] if stage == "train" else [])
        line = _first_line(argv + [a for item in items for a in ("-p", item)])
        assert message in line, (stage, items, line)


def test_a_dead_kernel_is_one_line(repo, monkeypatch):
    import papermill as pm
    from nbclient.exceptions import DeadKernelError
    def die(*args, **kwargs): raise DeadKernelError("Kernel died")
    monkeypatch.setattr(pm, "execute_notebook", die)
    line = _first_line(["lemma"])
    assert line.startswith("unseen-stage lemma: the notebook's kernel died (killed, or out of memory)"), line


def test_an_empty_matrix_is_named_before_dvc_runs(repo, capsys):
    from unseen.repro import main as repro_main
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["matrix"]["seeds"] = []
    Path("params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit) as e:
        repro_main(["--no-progress"])
    assert str(e.value.code) == "unseen-repro: params.yaml matrix.seeds is []: list at least one seed, e.g. seeds: [0]"
    with pytest.raises(ValueError, match="train.experiments is {}"):
        check_matrix({"matrix": {"seeds": [0]}, "train": {"experiments": {}}})


# 6. a corrupt checkpoint: a warning naming it, then the run starts afresh; save_checkpoint syncs before renaming

@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from unseen.datasets import DataConfig, generate_datasets
    d = tmp_path_factory.mktemp("data") / "data"
    generate_datasets(DataConfig(n_train=20, train_problems=600, test_problems=20), 0, d, progress=False)
    return d


SMALL = dict(n_layer=1, d_model=32, n_head=2, d_mlp=64)


@pytest.mark.parametrize("damage", ["truncated weights", "bad json", "no optimizer state"])
def test_a_corrupt_checkpoint_is_named_and_the_run_starts_afresh(data, tmp_path, capsys, damage):
    import torch
    from safetensors.torch import load_file
    from unseen.model import ModelConfig
    from unseen.train import TrainConfig, train
    torch.set_num_threads(1)
    cfg = TrainConfig(compile=False, steps=12, batch_size=8, warmup=2, decay_steps=6, log_every=6, checkpoint_every=6, monitor_problems=8)
    train(data, tmp_path / "fresh", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    ckpt = tmp_path / "r/checkpoint"
    if damage == "truncated weights": (ckpt / "model.safetensors").write_bytes((ckpt / "model.safetensors").read_bytes()[:100])
    elif damage == "bad json": (ckpt / "state.json").write_text('{"step": 1')
    else: (ckpt / "optimizer.safetensors").unlink()
    for f in ("log.csv", "metrics.json", "model.safetensors"): (tmp_path / "r" / f).unlink()
    capsys.readouterr()
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    out = capsys.readouterr().out
    assert f"WARNING: checkpoint {ckpt} is unreadable" in out and "starting this run afresh" in out, out
    a, b = load_file(str(tmp_path / "fresh/model.safetensors")), load_file(str(tmp_path / "r/model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)                 # afresh means what a fresh run gives
    assert (tmp_path / "fresh/log.csv").read_text() == (tmp_path / "r/log.csv").read_text()


def test_save_checkpoint_syncs_its_files_before_the_renames(tmp_path, monkeypatch):
    import torch
    import unseen.train as train_module
    from unseen.model import ModelConfig, Transformer
    events = []
    real_fsync, real_rename = os.fsync, Path.rename
    monkeypatch.setattr(train_module.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(Path, "rename", lambda self, target: (events.append("rename"), real_rename(self, target))[1])
    net = Transformer(ModelConfig(vocab_size=20, max_len=8, n_layer=1, d_model=8, n_head=2, d_mlp=16))
    opt = torch.optim.AdamW(net.parameters())
    train_module.save_checkpoint(tmp_path / "ckpt", net, opt, 1, "f")
    train_module.save_checkpoint(tmp_path / "ckpt", net, opt, 2, "f")   # the second one renames the first away
    first = events.index("rename")
    assert events[:first].count("fsync") >= 4, events             # three files and the directory, then the renames
    assert train_module.load_checkpoint(tmp_path / "ckpt", net, opt, "f")[0] == 2


# 9. Gemma: the terminal shows why no model was analysed; each model's result stands on its own

def test_a_corrupt_model_costs_only_itself(tmp_path, monkeypatch):
    import unseen.gemma_stats as gs
    good = gs.ModelResult({"model": "good", "source": "x", "status": "ok", "message": ""}, [{"model": "good", "set": "unused"}])
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + os.urandom(64))
    real = gs._analyse_source
    monkeypatch.setattr(gs, "_analyse_source", lambda source, cfg, progress: good if source.name == "good" else real(source, cfg, progress))
    models, table, _ = gs.analyse_models([{"name": "broken", "source": str(corrupt)}, {"name": "good", "source": str(tmp_path)}],
                                         gs.GemmaConfig(), isolate=False)
    status = dict(zip(models["model"], models["status"]))
    assert status == {"broken": "failed", "good": "ok"}, status
    message = models.set_index("model").loc["broken", "message"]
    assert str(corrupt) in message and "fix or replace the checkpoint" in message, message
    assert list(table["model"]) == ["good"]


@pytest.mark.slow
def test_no_available_model_says_why_on_the_terminal(repo):
    line = _first_line(["gemma", "-p", "models=[{name: mine, source: /nowhere/mine.gguf}]", "-p", "isolate=false"])
    assert "no listed model could be analysed here" in line and "mine: not available here" in line and "/nowhere/mine.gguf" in line, line


# 10. nothing lost: a stage never deletes or writes what is not its own, whatever out_dir, --tag or a name says

@pytest.fixture
def clone(tmp_path, monkeypatch):
    "A smoke copy of the repository in tmp_path/home/clone, a canary beside it and a user's file in home/outside/victim."
    home = tmp_path / "home"
    (home / "clone").mkdir(parents=True)
    _copy_working_tree(home / "clone")
    _smoke_params(home / "clone")
    (home / "canary.txt").write_text("alive")
    (home / "outside/victim").mkdir(parents=True); (home / "outside/victim/user.txt").write_text("mine")
    (home / "clone/runs/data").mkdir(parents=True); (home / "clone/runs/data/train.safetensors").write_text("data")
    monkeypatch.chdir(home / "clone")
    monkeypatch.delenv("DVC_STAGE", raising=False)
    return home


def _everything(home) -> dict:
    "Every file under `home` but the parameters a test edits, with its bytes."
    return {p.relative_to(home).as_posix(): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file() and p.name != "params.yaml"}


UNSAFE = [  # argv, what the one line says
    (["evaluate", "-p", "run=standard", "-p", "out_dir=."], "-p out_dir=.: that is the repository itself"),
    (["evaluate", "-p", "run=standard", "-p", "out_dir=.."], "-p out_dir=..: that is"),
    (["evaluate", "-p", "run=standard", "-p", "out_dir=runs/..", "--tag", "e1"], "that is the repository itself"),
    (["evaluate", "-p", "run=standard", "-p", "out_dir=runs/data", "--tag", "e17"], "runs/data, an output of stage generate"),
    (["evaluate", "-p", "run=standard", "-p", "out_dir=runs", "--tag", "e18"], "an output of stage"),
    (["evaluate", "-p", "run=standard", "-p", "out_dir=.git", "--tag", "e19"], "inside .git"),
    (["evaluate", "-p", "run=standard", "-p", "out_dir=runs/eval/copy-s0", "--tag", "e20"], "an output of stage evaluate"),
    (["lemma", "-p", "out_dir=../outside/victim", "-p", "figures_dir=runs/byhand/f", "--tag", "h1b"],
     "holds files that stage lemma did not write (no .unseen-stage"),
    (["lemma", "-p", "out_dir=nbs", "-p", "figures_dir=runs/byhand/f", "--tag", "h1c"], "holds files that stage lemma did not write"),
    (["lemma", "-p", "out_dir=runs/x", "-p", "figures_dir=.", "--tag", "h1d"], "-p figures_dir=.: that is the repository itself"),
    (["lemma", "-p", "out_dir=runs/x", "-p", "figures_dir=..", "--tag", "h1e"], "-p figures_dir=..: that is"),
    (["train", "-p", "run=standard", "-p", "out_dir=runs/x", "-p", "weights_dir=runs/data", "--tag", "t"],
     "-p weights_dir=runs/data: that lies in runs/data, an output of stage generate"),
    (["lemma", "-p", "out_dir=runs/x", "-p", "figures_dir=runs/data/n1000", "--tag", "h1f"], "an output of stage generate"),
    (["lemma", "-p", "out_dir=README.md/x", "-p", "figures_dir=runs/byhand/f", "--tag", "h1g"], "README.md is a file"),
    (["lemma", "-p", "out_dir=runs/x", "--tag", "x/../../../../outside/tagesc"], "--tag='x/../../../../outside/tagesc': a name that"),
    (["lemma", "-p", "out_dir=runs/x", "--tag", "/abs"], "--tag='/abs': a name that becomes a path"),
    (["train", "-p", "run=../../../../outside/runesc"], "-p run='../../../../outside/runesc': a name that becomes a path"),
    (["evaluate", "-p", "run=nonexistent"], "unknown experiment 'nonexistent': train.experiments in params.yaml has ["),
]


@pytest.mark.parametrize("argv,says", UNSAFE, ids=[" ".join(a) for a, _ in UNSAFE])
def test_an_out_dir_tag_or_name_that_is_not_the_stages_own_is_refused_before_anything_is_touched(clone, argv, says):
    before = _everything(clone)
    line = _first_line(argv)
    assert says in line, line
    assert len(str(line).splitlines()) == 1
    assert _everything(clone) == before                     # not one file deleted, changed or added
    assert sorted(p.name for p in clone.iterdir()) == ["canary.txt", "clone", "outside"]


def test_an_experiment_name_that_is_a_path_is_refused_by_every_door(clone):
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["train"]["experiments"]["../../../../../../outside/expesc"] = {"variant": "standard"}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    before = _everything(clone)
    assert "train.experiments='../../../../../../outside/expesc': a name that becomes a path" in _first_line(["generate"])
    from unseen.repro import main as repro_main
    with pytest.raises(SystemExit) as e:
        repro_main(["--no-progress"])
    assert "a name that becomes a path" in str(e.value.code)
    params["train"]["experiments"] = {"a/b": {"variant": "standard"}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    assert "train.experiments='a/b'" in _first_line(["generate"])
    assert _everything(clone) == before


def test_duplicate_seeds_are_refused(clone):
    from unseen.repro import main as repro_main
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["matrix"]["seeds"] = [0, 0]
    Path("params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit) as e:
        repro_main(["--no-progress"])
    assert "matrix.seeds is [0, 0]: seed 0 is listed twice" in str(e.value.code)
    assert "seed 0 is listed twice" in _first_line(["evaluate", "-p", "run=standard"])   # a matrix cell that dvc repro runs
    # plain `dvc repro` with nothing else changed: the changed list reruns generate (it tracks matrix.seeds), which refuses it
    assert "matrix.seeds" in yaml.safe_load(Path("dvc.yaml").read_text())["stages"]["generate"]["params"]
    assert "seed 0 is listed twice" in _first_line(["generate"])


def _fake_notebook(writes):
    "A stand-in for papermill that writes `writes` (name -> text) into the out_dir it is given."
    def execute(notebook, output, parameters, **kwargs):
        out = Path(kwargs["cwd"]) / parameters["out_dir"]
        out.mkdir(parents=True, exist_ok=True)
        for name, text in writes.items(): (out / name).write_text(text)
        Path(output).write_text("{}")
    return execute


def test_a_run_by_hand_outside_the_repository_goes_into_an_empty_or_its_own_directory_only(clone, monkeypatch):
    import papermill as pm
    monkeypatch.setattr(pm, "execute_notebook", _fake_notebook({"table.md": "new"}))
    target = clone / "outside/empty"
    main(["lemma", "-p", f"out_dir={target}", "-p", "figures_dir=runs/byhand/f", "--tag", "h2b"])
    assert sorted(p.name for p in target.iterdir()) == [".unseen-stage", "table.md"]
    assert sorted(p.name for p in (clone / "outside").iterdir()) == ["empty", "victim"]   # no lock, no partial left beside it
    main(["lemma", "-p", f"out_dir={target}", "-p", "figures_dir=runs/byhand/f", "--tag", "h2b"])   # its own: replaced
    assert "holds files that stage gemma did not write" in _first_line(["gemma", "-p", f"out_dir={target}", "--tag", "g"])
    assert (target / "table.md").read_text() == "new" and (clone / "outside/victim/user.txt").read_text() == "mine"


def test_a_full_disk_is_one_line_naming_the_directory(clone, monkeypatch):
    import errno, papermill as pm
    def full(notebook, output, parameters, **kwargs): raise OSError(errno.EFBIG, "File too large")
    monkeypatch.setattr(pm, "execute_notebook", full)
    line = _first_line(["lemma", "-p", "out_dir=runs/mine", "-p", "figures_dir=runs/byhand/f", "--tag", "full"])
    assert line == ("unseen-stage lemma: cannot write runs/mine (File too large); free space, raise the limit, or write elsewhere "
                    "with -p out_dir=DIR (nothing there looks complete)"), line
    assert not Path("runs/mine").exists()
    def full_in_the_notebook(notebook, output, parameters, **kwargs):   # safetensors' words for it, from inside the kernel
        raise pm.PapermillExecutionError(0, 1, "SafetensorError: I/O error: File too large (os error 27)", "SafetensorError",
                                         "Error while serializing: I/O error: File too large (os error 27)", [])
    monkeypatch.setattr(pm, "execute_notebook", full_in_the_notebook)
    line = _first_line(["lemma", "-p", "out_dir=runs/mine", "-p", "figures_dir=runs/byhand/f", "--tag", "full"])
    assert line.startswith("unseen-stage lemma: cannot write runs/mine (File too large)"), line


def test_a_pickle_checkpoint_is_never_loaded_and_named(tmp_path):
    import pickle
    from unseen.finetune_experiment import load_causal_lm
    from unseen.gemma import CheckpointError
    (tmp_path / "config.json").write_text('{"model_type": "gemma3_text"}')
    (tmp_path / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": 1}))
    with pytest.raises(CheckpointError, match=f"no safetensors weights in {tmp_path}: pickle weights are never loaded"):
        load_causal_lm(str(tmp_path), name="mine")


# 11. inputs checked on read: the evaluate stage reads only the dataset and weights its train run recorded

def _flip(path: Path, at: int = -1):
    data = bytearray(path.read_bytes()); data[at] ^= 1; path.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_wrong_or_damaged_input_stops_the_evaluate_stage_naming_the_file(repo):
    main(["generate"])
    for run in ("standard", "copy"): main(["train", "-p", f"run={run}"])
    model, split = Path("runs/models/standard-s0.safetensors"), Path("runs/data/n1000/test_s1.safetensors")
    pristine = {p: p.read_bytes() for p in (model, split, Path("runs/data/n1000/vocab.json"))}
    damages = {   # what is done to an input -> what the one line says
        "flipped byte in the weights": (lambda: _flip(model), f"{model} is not the file that runs/train/standard-s0/metrics.json records"),
        "truncated weights": (lambda: model.write_bytes(pristine[model][:200]), f"{model} is not the file that"),
        "another run's weights": (lambda: model.write_bytes(Path("runs/models/copy-s0.safetensors").read_bytes()), f"{model} is not the file"),
        "flipped byte in a test set": (lambda: _flip(split), "runs/data/n1000 is not the dataset that runs/train/standard-s0/metrics.json records"),
        "emptied vocab.json": (lambda: Path("runs/data/n1000/vocab.json").write_text(""), "runs/data/n1000 is not the dataset that"),
    }
    for name, (damage, says) in damages.items():
        damage()
        line = _first_line(["evaluate", "-p", "run=standard"])
        assert line.startswith("unseen-stage evaluate: ValueError: ") and says in line, (name, line)
        assert not Path("runs/eval/standard-s0/metrics.json").exists(), name
        for path, data in pristine.items(): path.write_bytes(data)
    main(["evaluate", "-p", "run=standard"])                       # restored: it runs
    assert Path("runs/eval/standard-s0/metrics.json").exists()
    split.write_bytes(pristine[split][:300])                       # a truncated dataset read by hand is named too
    from unseen.datasets import load_sequences
    with pytest.raises(ValueError, match=f"{split} is truncated or corrupt"):
        load_sequences(split)
