"""What training several seeds in one process, or compiling the model, could buy: per-problem cost of larger batches, and torch.compile against eager.

    python benchmarks/batch_bound.py [--seq 36] [--targets 13] [--batch 64] [--stack 2 3] [--steps 150] [--no-compile]

Stacking K seeds' models in one process (torch.func.stack_module_state and vmap) runs each layer's
products for K models at once, on K x the problems of one step. A single model's step on a batch
K times as large does the same products on the same number of problems with one set of weights,
so its cost per problem is what stacking can reach at best (it adds K sets of weights and their
optimiser updates). The steps are timed alternately in one process on one thread (machines here
are noisy: the ratios are what counts). The model is params.yaml's `train.model` at n_train 1000
(1,110 tokens); the loss counts the last `--targets` tokens of each row, as the task's chain of
thought and answer; bfloat16 autocast, as the pipeline trains.
"""
import argparse

import torch

from train_step import step_fn, task_batch, time_alternately   # the other benchmarks' step and timing (this folder is on sys.path)
from unseen.model import ModelConfig, Transformer
from unseen.pipeline import load_params


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=36, help="padded length of a batch (the default task's mean)")
    ap.add_argument("--targets", type=int, default=13); ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--stack", type=int, nargs="+", default=[2, 3], help="batch multiples K to time")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile (it takes a C++ compiler and ~30 s)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    spec = load_params()["train"]["model"]
    cfg = ModelConfig(vocab_size=1110, max_len=args.seq + 8, **spec)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)

    def batch(n): return task_batch(n, args.seq, args.targets, cfg.vocab_size)

    def model():
        torch.manual_seed(0); return Transformer(cfg)

    runs = {f"batch {args.batch}": (1, step_fn(model(), False, autocast), batch(args.batch))}
    for k in args.stack: runs[f"batch {k} x {args.batch}"] = (k, step_fn(model(), False, autocast), batch(k * args.batch))
    if not args.no_compile:
        compiled = torch.compile(model(), dynamic=True)
        runs[f"batch {args.batch}, torch.compile"] = (1, step_fn(compiled, False, autocast), batch(args.batch))
    elapsed = time_alternately({name: (step, xy) for name, (_, step, xy) in runs.items()}, args.steps)   # warm-up compiles too
    base = elapsed[f"batch {args.batch}"]
    print(f"{args.seq} tokens a problem, {args.targets} targets, d_model {cfg.d_model}, {cfg.n_head} heads of {cfg.head_dim}, "
          f"bfloat16 autocast, 1 thread, {args.steps} steps each")
    for name, (k, _, _) in runs.items():
        per = elapsed[name] / args.steps / k
        print(f"{name:<28}{elapsed[name] / args.steps * 1e3:7.1f} ms/step {per * 1e3:6.1f} ms per {args.batch} problems  "
              f"{base / args.steps / per:.2f}x the batch-{args.batch} step per problem")


if __name__ == "__main__":
    main()
