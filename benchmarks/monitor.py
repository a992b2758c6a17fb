"""What the training log's teacher-forced scoring costs: the length-grouped scorer against one padded batch per set.

    python benchmarks/monitor.py [--problems 128] [--repeats 30]

A log row scores the first `--problems` problems of the validation split and of the three test scenarios
(`TrainConfig.monitor_problems`). Both ways get the same accuracies (nbs/04_train.ipynb); this times them
alternately in one process on one thread with params.yaml's model, untrained, at n_train 1000.
"""
import argparse

import numpy as np
import torch

from train_step import time_alternately   # the other benchmarks' timing (this folder is on sys.path)
from unseen.datasets import DataConfig, scenario_sets
from unseen.model import ModelConfig, Transformer
from unseen.pipeline import load_params
from unseen.train import batch_from, monitor


@torch.no_grad()
def padded_monitor(model, sets: dict) -> dict:
    "The same accuracies from one padded batch per set, the way a training step sees its problems."
    model.eval(); out = {}
    for name, seqs in sets.items():
        inputs, labels = batch_from(seqs, np.arange(len(seqs)))
        pred, counted = model(inputs).argmax(-1), labels != -100
        ok = (pred == labels) | ~counted
        answer_at = counted.cumsum(1) == counted.sum(1, keepdim=True) - 1
        out |= {f"{name}_token_acc": (ok & counted).sum().item() / counted.sum().item(), f"{name}_seq_acc": ok.all(1).float().mean().item(),
                f"{name}_answer_acc": ((pred == labels) & answer_at).sum().item() / len(seqs)}
    model.train()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=128); ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    sets = scenario_sets(DataConfig(test_problems=args.problems), seed=0)      # s1, s2, s3: the validation split looks like s1
    sets = {"valid": sets["s1"], **sets}
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=1110, max_len=64, **load_params()["train"]["model"]))
    assert monitor(model, sets, "cpu") == padded_monitor(model, sets)
    runs = {"length groups (monitor)": (lambda *_: monitor(model, sets, "cpu"), (None, None)),
            "one padded batch": (lambda *_: padded_monitor(model, sets), (None, None))}
    elapsed = time_alternately(runs, args.repeats, warmup=3)
    base = elapsed["one padded batch"]
    print(f"{len(sets)} sets of {args.problems} problems, params.yaml's model, 1 thread, {args.repeats} log rows each")
    for name in runs:
        print(f"{name:<26}{elapsed[name] / args.repeats * 1e3:7.1f} ms a log row  {elapsed[name] / base:.2f}x the padded batch")


if __name__ == "__main__":
    main()
