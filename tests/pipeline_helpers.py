"""Helpers shared by the tests that run the pipeline in a throwaway copy of the repository."""
import os, shutil, subprocess, sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]
BIN = Path(sys.executable).parent
# The smoke profile (params-smoke.yaml): the keys of params.yaml at toy scale.
SMOKE = yaml.safe_load((ROOT / "params-smoke.yaml").read_text())
# What makes a run small, per section: the smoke values of these keys put over another parameters file (params-paper.yaml)
SCALE = {"base": ["n_train"], "generate": ["train_problems", "test_problems"], "matrix": ["seeds", "more"],
         "train": ["model", "intervention", "training", "experiments"], "figures": ["baseline"],
         "finetune": ["model", "n_seeds", "eval_problems", "problem", "training"]}


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
    "Write root/params.yaml: params-smoke.yaml, or `source` with the smoke profile's SCALE keys, then `extra`, per section."
    params = yaml.safe_load((source or ROOT / "params-smoke.yaml").read_text())
    scale = {section: {k: SMOKE[section][k] for k in keys} for section, keys in SCALE.items()} if source else {}
    for section, values in [*scale.items(), *(extra or {}).items()]:
        params[section].update(values)  # one level deep: a section's values replace whole sub-mappings
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _run(cmd, cwd):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
