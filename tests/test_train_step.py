"""The pipeline's training step (packed batches, fused AdamW, compiled in bfloat16): a rerun gives the same bytes, a killed
run resumes to the whole run's bytes, and without a C++ compiler it runs eagerly after one line. On a CPU without native
bfloat16 the runs are float32, the dtype such a machine runs the pipeline in (docs/timing.md)."""
import json, signal, subprocess, sys, time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from unseen.config import native_bf16
from unseen.datasets import DataConfig, generate_datasets
from unseen.train import compiled, target_loss

SCRIPT = """
import sys, torch
from unseen.interventions import variant_settings
from unseen.model import ModelConfig
from unseen.train import TrainConfig, train
torch.set_num_threads(1)
model, iv = variant_settings("reset", dict(n_layer=2, d_model=64, n_head=4, d_mlp=128), {"reset_every": 70, "reset_quiet": None})
cfg = TrainConfig(steps=200, batch_size=32, warmup=20, log_every=25, checkpoint_every=20, monitor_problems=16, schedule="cosine",
                  lr=2e-3, min_lr_ratio=0.1, dtype=sys.argv[3], compile=True)
train(sys.argv[1], sys.argv[2], ModelConfig(**model), iv, cfg, variant="reset", progress=False)
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data") / "data"
    generate_datasets(DataConfig(train_problems=4000, test_problems=40), 0, d, progress=False)
    return d


def _run(data, out):
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(data), str(out), "bfloat16" if native_bf16() else "float32"])


def _checkpoint_step(out: Path) -> int:
    "The step of the run's checkpoint, 0 while there is none; read without racing the writer's renames."
    for d in ("checkpoint", "checkpoint.old"):
        try: return json.loads((out / d / "state.json").read_text())["step"]
        except (FileNotFoundError, json.JSONDecodeError): continue
    return 0


def _files(out: Path) -> dict:
    return {f: (out / f).read_bytes() for f in ("model.safetensors", "log.csv", "metrics.json")}


@pytest.mark.slow
def test_compiled_step_reruns_and_resumes_to_the_same_bytes(data, tmp_path):
    for name in ("a", "b"): assert _run(data, tmp_path / name).wait() == 0
    assert _files(tmp_path / "a") == _files(tmp_path / "b")

    proc = _run(data, tmp_path / "killed")
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and _checkpoint_step(tmp_path / "killed") < 100: time.sleep(0.01)
    proc.send_signal(signal.SIGKILL); proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed: make it longer"
    assert 100 <= _checkpoint_step(tmp_path / "killed") < 200
    (tmp_path / "killed/log.csv").unlink()            # `dvc repro` deletes a stage's outputs before rerunning it
    assert _run(data, tmp_path / "killed").wait() == 0
    assert _files(tmp_path / "killed") == _files(tmp_path / "a")


def test_without_a_cpp_compiler_the_loss_runs_eagerly_after_one_line(monkeypatch, capsys):
    import torch._inductor.config as inductor
    monkeypatch.setattr(inductor.cpp, "cxx", ("/nonexistent/c++",))
    assert compiled(target_loss) is target_loss
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no C++ compiler" in out and "/nonexistent/c++" in out
    assert compiled(target_loss, enabled=False) is target_loss
