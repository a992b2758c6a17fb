"""Training: same seed same result, and a run killed with SIGKILL resumes to the same weights, bit for bit."""
import csv, json, os, signal, subprocess, sys, time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from unseen.datasets import DataConfig, generate_datasets
from unseen.interventions import variant_settings
from unseen.model import ModelConfig
from unseen.tokens import STRUCTURE
from unseen.train import TrainConfig, train

SMALL = dict(n_layer=2, d_model=64, n_head=4, d_mlp=128)
CFG = dict(compile=False, steps=300, batch_size=32, warmup=20, log_every=25, checkpoint_every=20, monitor_problems=16,
           schedule="cosine", lr=2e-3, min_lr_ratio=0.1, dtype="float32")   # a short eager cosine run in float32 (test_train_step.py: compiled)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data") / "data"
    generate_datasets(DataConfig(train_problems=4000, test_problems=40), 0, d, progress=False)
    return d


def _variant(name, **intervention):
    "train()'s model, intervention and variant for variant `name` at the tests' size, with `intervention` overrides."
    model, iv = variant_settings(name, SMALL, intervention)
    return dict(model=ModelConfig(**model), intervention=iv, variant=name)


def _weights(d):
    return load_file(str(Path(d) / "model.safetensors"))


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_same_seed_same_result(data, tmp_path):
    torch.set_num_threads(1)
    cfg = TrainConfig(**{**CFG, "steps": 40})
    for name in ("a", "b"):
        train(data, tmp_path / name, cfg=cfg, progress=False, **_variant("copy_reset", reset_every=15, reset_quiet=None))
    train(data, tmp_path / "c", cfg=cfg, seed=1, progress=False, **_variant("copy_reset", reset_every=15, reset_quiet=None))
    assert _same(_weights(tmp_path / "a"), _weights(tmp_path / "b"))
    assert not _same(_weights(tmp_path / "a"), _weights(tmp_path / "c"))
    assert (tmp_path / "a/log.csv").read_text() == (tmp_path / "b/log.csv").read_text()


SCRIPT = """
import sys, torch
from unseen.interventions import variant_settings
from unseen.model import ModelConfig
from unseen.train import TrainConfig, train
torch.set_num_threads(1)
model, iv = variant_settings("reset", {model}, {{"reset_every": 70, "reset_quiet": None}})
train(sys.argv[1], sys.argv[2], ModelConfig(**model), iv, TrainConfig(**{cfg}), variant="reset", progress=False)
"""


def _checkpoint_step(run) -> int:
    "The step of the run's checkpoint, read the way `load_checkpoint` finds it (0 if none yet)."
    # the writer swaps checkpoint/ for checkpoint.tmp/ by two renames: between them the state is in checkpoint.old/,
    # and a file found one moment may be gone the next
    for where in ("checkpoint", "checkpoint.old"):
        try: return json.loads((Path(run) / where / "state.json").read_text())["step"]
        except (FileNotFoundError, ValueError): continue
    return 0


def test_checkpoint_step_reads_a_checkpoint_caught_between_its_renames(tmp_path):
    assert _checkpoint_step(tmp_path) == 0
    (tmp_path / "checkpoint.old").mkdir(); (tmp_path / "checkpoint.old/state.json").write_text('{"step": 120}')
    assert _checkpoint_step(tmp_path) == 120
    (tmp_path / "checkpoint").mkdir(); (tmp_path / "checkpoint/state.json").write_text('{"st')   # half-written: skipped
    assert _checkpoint_step(tmp_path) == 120


def test_kill_9_and_resume_gives_the_same_run(data, tmp_path):
    script = SCRIPT.format(model=SMALL, cfg=CFG)
    run = lambda out: subprocess.Popen([sys.executable, "-c", script, str(data), str(out)])
    subprocess.run([sys.executable, "-c", script, str(data), str(tmp_path / "whole")], check=True)

    proc = run(tmp_path / "killed")
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if _checkpoint_step(tmp_path / "killed") >= 100: break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL); proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed: make it longer"
    assert not (tmp_path / "killed/model.safetensors").exists()
    assert 100 <= _checkpoint_step(tmp_path / "killed") < CFG["steps"]

    (tmp_path / "killed/log.csv").unlink()   # `dvc repro` deletes a stage's outputs before rerunning it
    subprocess.run([sys.executable, "-c", script, str(data), str(tmp_path / "killed")], check=True)  # resumes
    assert _same(_weights(tmp_path / "whole"), _weights(tmp_path / "killed"))
    assert (tmp_path / "whole/log.csv").read_text() == (tmp_path / "killed/log.csv").read_text()
    assert (tmp_path / "whole/metrics.json").read_text() == (tmp_path / "killed/metrics.json").read_text()


def test_a_finished_run_rerun_after_its_outputs_are_deleted_writes_them_again(data, tmp_path):
    # `dvc repro -f` on a finished run: DVC deletes its outputs, the checkpoint of the last step stays
    torch.set_num_threads(1)
    cfg = TrainConfig(**{**CFG, "steps": 30, "checkpoint_every": 10})
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    before = {f: (tmp_path / "r" / f).read_bytes() for f in ("log.csv", "metrics.json", "model.safetensors")}
    for f in before: (tmp_path / "r" / f).unlink()
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    assert {f: (tmp_path / "r" / f).read_bytes() for f in before} == before


def test_a_checkpoint_of_another_configuration_is_not_resumed(data, tmp_path, capsys):
    cfg = TrainConfig(**{**CFG, "steps": 20, "checkpoint_every": 10})
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    train(data, tmp_path / "r", model=ModelConfig(**{**SMALL, "d_mlp": 64}), cfg=cfg, progress=False)
    assert "another configuration" in capsys.readouterr().out
    rows = list(csv.DictReader(open(tmp_path / "r/log.csv")))
    assert [int(r["step"]) for r in rows] == [0, 20]


def test_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="dvc repro generate"):
        train(tmp_path / "nothing", tmp_path / "out", cfg=TrainConfig(steps=1, schedule="cosine"))


def test_a_checkpoint_left_half_deleted_by_a_kill_does_not_block_the_next(data, tmp_path):
    cfg = TrainConfig(**{**CFG, "steps": 20, "checkpoint_every": 10})
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=cfg, progress=False)
    (tmp_path / "r/checkpoint.old").mkdir()                   # killed while deleting the previous checkpoint
    (tmp_path / "r/checkpoint.old/model.safetensors").write_bytes(b"partial")
    train(data, tmp_path / "r", model=ModelConfig(**SMALL), cfg=TrainConfig(**{**CFG, "steps": 30, "checkpoint_every": 10}), progress=False)
    assert json.loads((tmp_path / "r/checkpoint/state.json").read_text())["step"] == 30


def test_resets_of_the_name_rows_keep_the_structure_rows(data, tmp_path):
    "lr 0: only resets move the embedding; with reset_rows 'names' the structure tokens' rows stay at initialisation."
    torch.set_num_threads(1)
    cfg = TrainConfig(**{**CFG, "steps": 20, "lr": 0.0, "checkpoint_every": 0})
    runs = {"none": ("standard", {}), "names": ("reset", {"reset_every": 10, "reset_rows": "names", "reset_quiet": None}),
            "all": ("reset", {"reset_every": 10, "reset_quiet": None})}
    wte = {}
    for name, (variant, overrides) in runs.items():
        train(data, tmp_path / name, cfg=cfg, progress=False, **_variant(variant, **overrides))
        wte[name] = _weights(tmp_path / name)["wte.weight"]
    k = len(STRUCTURE)
    assert torch.equal(wte["names"][:k], wte["none"][:k])
    assert (wte["names"][k:] != wte["none"][k:]).all()
    assert (wte["all"] != wte["none"]).all()


def test_no_reset_in_a_runs_last_cycle(data, tmp_path):
    "lr 0: a run of 25 steps re-draws at step 10 only (20 is within its last 10 steps), as one of 20 steps does."
    torch.set_num_threads(1)
    wte = {}
    for steps in (20, 25, 30):
        cfg = TrainConfig(**{**CFG, "steps": steps, "lr": 0.0, "checkpoint_every": 0})
        train(data, tmp_path / str(steps), cfg=cfg, progress=False, **_variant("reset", reset_every=10, reset_quiet=None))
        wte[steps] = _weights(tmp_path / str(steps))["wte.weight"]
    assert torch.equal(wte[25], wte[20])
    assert not torch.equal(wte[30], wte[20])            # 30 steps: re-drawn at 10 and 20
