"""Helpers shared by the tests that run the pipeline in a throwaway copy of the repository."""
import os, shutil, subprocess, sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]
BIN = Path(sys.executable).parent
# Smoke-scale overrides, per stage, of the default params.yaml (grows with the pipeline).
SMOKE = {
    "base": {"n_train": 50},
    "generate": {"train_problems": 3000, "test_problems": 60, "n_train_sweep": [20]},
    "matrix": {"seeds": [0]},
    "train": {"model": {"n_layer": 1, "d_model": 32, "n_head": 2, "d_mlp": 64},
              "intervention": {"reset_every": 10},
              "training": {"steps": 20, "batch_size": 16, "warmup": 5, "log_every": 10, "monitor_problems": 20},
              # every kind of experiment once: the six variants, the mixture read-out, resets of the names only, untied, no weight decay, resets that stop, the recipe, the sweep
              "experiments": {**{v: {"variant": v} for v in ("standard", "copy", "freeze", "reset", "copy_freeze", "copy_reset")},
                              "standard-untied": {"variant": "standard", "model": {"tied": False}},
                              "standard-wd0": {"variant": "standard", "training": {"weight_decay": 0.0}},
                              "reset-until": {"variant": "reset", "intervention": {"reset_until": 10}},
                              "copy_mixture": {"variant": "copy", "model": {"copy": "mixture"}},
                              "reset_names": {"variant": "reset", "intervention": {"reset_rows": "names"}},
                              "reset_names-until": {"variant": "reset", "intervention": {"reset_rows": "names", "reset_until": 10}},
                              "full_recipe": {"variant": "copy_freeze", "n_train": 20},
                              **{f"{v}-n{n}": {"variant": v, "n_train": n} for v in ("standard", "copy") for n in (20, 50)}}},
    "figures": {"baseline": "standard-n50"},
    # a tiny random Gemma instead of fine-tuning the real 270M (~15 min)
    "finetune": {"model": {"name": "tiny", "source": "tiny"}, "n_seeds": 1, "eval_problems": 8,
                 "problem": {"n_vars": [4, 4], "depth": [1, 1], "n_distractors": [1, 1]},
                 "training": {"steps": 4, "batch_size": 4, "eval_every": 2, "dtype": "float32"}},
}


def _copy_working_tree(dst: Path):
    "The repository's code as it is now (tracked and new files), without pipeline results, committed in a fresh git repo."
    ls = lambda *flags: subprocess.run(["git", "ls-files", "-z", *flags], cwd=ROOT, check=True,
                                       capture_output=True, text=True).stdout.split("\0")
    # no results of the real-scale pipeline: its dvc.lock and the metrics kept in git would mix with the smoke run's
    is_result = lambda f: f == "dvc.lock" or f.startswith(("runs/", "figures/"))
    for f in [f for f in ls() + ls("-o", "--exclude-standard") if f and not is_result(f)]:
        if (ROOT / f).is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dst / f)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "snapshot"]):
        subprocess.run(cmd, cwd=dst, check=True)


def _smoke_params(root: Path, source: Path | None = None, extra: dict | None = None):
    "Write root/params.yaml: `source` (default: that file itself) at smoke scale, then `extra`, per section."
    params = yaml.safe_load((source or root / "params.yaml").read_text())
    for section, values in [*SMOKE.items(), *(extra or {}).items()]:
        params[section].update(values)  # one level deep: a smoke section replaces whole sub-mappings
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _run(cmd, cwd):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
