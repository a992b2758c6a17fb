"""Honest selection: what training and tuning decide (the trigger of the learning-rate decay, the weights, the printed
validation score) depends on the validation split only. Swapping the scenario test sets for other problems changes
nothing but the curves logged for watching."""
import json, shutil, subprocess, sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from unseen.datasets import DataConfig, generate_datasets
from unseen.model import ModelConfig
from unseen.train import TrainConfig, train

ROOT = Path(__file__).parents[1]
SMALL = dict(n_layer=1, d_model=32, n_head=2, d_mlp=64)
TRIGGER = dict(compile=False, steps=120, batch_size=16, warmup=5, log_every=10, checkpoint_every=0, monitor_problems=20,
               schedule="trigger", trigger_metric="token_acc", trigger_at=0.35, decay_steps=30, cycles=1)


def _swap_test_sets(data: Path, other: Path):
    "Replace the scenario test sets of `data` by those of `other` (other problems, another seed)."
    for s in ("s1", "s2", "s3"): shutil.copy(other / f"test_{s}.safetensors", data / f"test_{s}.safetensors")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("sel")
    cfg = DataConfig(n_train=50, train_problems=3000, test_problems=40, valid_problems=40)
    for name, seed in (("a", 0), ("b", 0), ("other", 7)): generate_datasets(cfg, seed, root / name, progress=False)
    _swap_test_sets(root / "b", root / "other")     # b: the same training and validation data as a, other test sets
    return root


def test_training_decides_on_validation_only(datasets, tmp_path):
    torch.set_num_threads(1)
    runs = {d: train(datasets / d, tmp_path / d, model=ModelConfig(**SMALL), cfg=TrainConfig(**TRIGGER), progress=False) for d in ("a", "b")}
    assert runs["a"]["triggered"] and 0 < runs["a"]["trigger_step"] < TRIGGER["steps"] - TRIGGER["decay_steps"]
    assert runs["a"]["trigger_step"] == runs["b"]["trigger_step"] and runs["a"]["step"] == runs["b"]["step"]
    wa, wb = load_file(str(tmp_path / "a/model.safetensors")), load_file(str(tmp_path / "b/model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    # the test sets did differ: the curves logged for watching them are not the same
    assert runs["a"]["s1_token_acc"] != runs["b"]["s1_token_acc"] or runs["a"]["s3_token_acc"] != runs["b"]["s3_token_acc"]


def test_another_cycle_is_decided_on_validation_only(datasets, tmp_path):
    torch.set_num_threads(1)
    cfg = TrainConfig(**{**TRIGGER, "cycles": 2, "cycle_below": 0.99})
    runs = {d: train(datasets / d, tmp_path / d, model=ModelConfig(**SMALL), cfg=cfg, progress=False) for d in ("a", "b")}
    assert runs["a"]["cycles"] == runs["b"]["cycles"] == 2     # a second cycle: below 0.99 on validation after the first
    assert runs["a"]["trigger_step"] == runs["b"]["trigger_step"] and runs["a"]["step"] == runs["b"]["step"]
    wa, wb = load_file(str(tmp_path / "a/model.safetensors")), load_file(str(tmp_path / "b/model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_tuning_prints_validation_and_test_only_on_request(datasets, tmp_path):
    spec = {"n_train": 50, "train_problems": 3000, "model": SMALL, "training": {**TRIGGER, "dtype": "float32"}}
    printed = {}
    for d in ("a", "b"):
        out = tmp_path / d
        (out / "data").mkdir(parents=True)
        shutil.copytree(datasets / d, out / "data" / "n50-rules")     # the sweep's dataset path for these settings
        run = subprocess.run([sys.executable, str(ROOT / "tuning/sweep.py"), "run", json.dumps(spec), "--out", str(out)],
                             capture_output=True, text=True, check=True)
        printed[d] = json.loads(run.stdout.strip().splitlines()[-1])
    for p in printed.values(): assert "valid" in p and not {"s1", "s2", "s3"} & set(p)
    drop_time = lambda p: {k: v for k, v in p.items() if k != "minutes"}
    assert drop_time(printed["a"]) == drop_time(printed["b"])
