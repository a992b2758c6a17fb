"""How well each trained run of the pipeline fits its own training problems, against new problems of the same distribution.

    python tuning/fit_gap.py [--problems 1000]     # in a checkout whose runs/models/*.safetensors are there (dvc checkout)

Greedy exact match on the first PROBLEMS problems of each run's training set and on its validation split, one line per
run, lowest validation first, then the mean gap of the runs below and at or above `--below` on validation.
"""
import argparse, functools, json
from pathlib import Path

import torch

from unseen.datasets import load_sequences
from unseen.evaluate import evaluate
from unseen.experiments import weights_path
from unseen.train import first_problems, load_model


@functools.cache
def splits(data_dir: str, problems: int) -> tuple:
    "The first `problems` training problems and the validation split of a dataset, read once for all the runs that share it."
    train = load_sequences(Path(data_dir) / "train.safetensors")
    return first_problems(train, problems), load_sequences(Path(data_dir) / "valid.safetensors")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=1000); ap.add_argument("--below", type=float, default=0.98)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for run in sorted(Path("runs/train").glob("*/metrics.json")):
        trained = json.loads(run.read_text())
        model = load_model(weights_path(trained["run"], trained["seed"]))
        train, valid = splits(trained["data_dir"], args.problems)
        fit, valid = evaluate(model, train)["exact_match"], evaluate(model, valid)["exact_match"]
        rows.append((valid, fit, run.parent.name, trained["step"], trained.get("cycles")))
    print("| run | steps | cycles | training problems | validation | gap |\n|---|---|---|---|---|---|")
    for valid, fit, name, steps, cycles in sorted(rows):
        print(f"| {name} | {steps:,} | {cycles} | {fit:.3f} | {valid:.3f} | {fit - valid:+.3f} |")
    for label, part in (("below", [r for r in rows if r[0] < args.below]), ("at or above", [r for r in rows if r[0] >= args.below])):
        if part: print(f"\n{len(part)} runs {label} {args.below} on validation: mean gap {sum(f - v for v, f, *_ in part) / len(part):+.3f}, "
                       f"range {min(f - v for v, f, *_ in part):+.3f} to {max(f - v for v, f, *_ in part):+.3f}")


if __name__ == "__main__":
    main()
