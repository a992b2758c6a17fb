"""What removing the padding could buy at most: a training step on batches of the mean length against the padded length.

    python benchmarks/padding_bound.py [--padded 36] [--mean 25] [--targets 13] [--dtype bfloat16] [--steps 150]

A batch of the default task is padded to its longest problem: 36 tokens on average for problems of
25 on average (64 problems a step, the default training set). Packing problems without padding
cannot do less work than a batch in which every problem has the mean length, so the ratio of the
two steps, timed alternately in one process on one thread, bounds what it could buy. Same model as
the pipeline (params.yaml: d_model 64, 2 layers, rotary positions, 1,110 tokens); the loss counts
the last `--targets` tokens of each row, as the task's chain of thought and answer.
"""
import argparse, contextlib

import torch

from train_step import step_fn, task_batch, time_alternately   # the other benchmarks' step and timing (this folder is on sys.path)
from unseen.model import ModelConfig, Transformer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--padded", type=int, default=36); ap.add_argument("--mean", type=int, default=25)
    ap.add_argument("--targets", type=int, default=13); ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--steps", type=int, default=150)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = Transformer(ModelConfig(vocab_size=1110, n_layer=2, d_model=64, n_head=4, d_mlp=256))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if args.dtype == "bfloat16" else contextlib.nullcontext()

    step = step_fn(model, False, autocast)
    runs = {f"padded ({args.padded} tokens)": (step, task_batch(args.batch, args.padded, args.targets, 1110)),
            f"mean length ({args.mean} tokens)": (step, task_batch(args.batch, args.mean, args.targets, 1110))}
    elapsed = time_alternately(runs, args.steps)
    print(f"batch {args.batch}, {args.targets} targets per problem, {args.dtype}, 1 thread")
    for name, seconds in elapsed.items(): print(f"{name:<26}{seconds / args.steps * 1e3:6.1f} ms/step")
    padded, mean = elapsed.values()
    print(f"removing the padding buys at most {padded / mean:.2f}x")


if __name__ == "__main__":
    main()
