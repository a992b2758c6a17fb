"""What a model option costs a training step: params.yaml's model with and without it, steps timed alternately.

    python benchmarks/model_options.py [--option qk_norm=true] [--seq 36] [--targets 13] [--batch 64] [--steps 150]

Both models take AdamW steps on the same random batch, alternately, in one process on one thread
(machines here are noisy: the ratio is what counts), under bfloat16 autocast as the pipeline trains.
The model is params.yaml's `train.model` at n_train 1000 (1,110 tokens); the loss counts the last
`--targets` tokens of each row, as the task's chain of thought and answer. Each `--option` is a
`ModelConfig` field and its value in YAML (`qk_norm=true`, `n_head=2`).
"""
import argparse

import torch
import yaml

from train_step import step_fn, task_batch, time_alternately   # the other benchmarks' step and timing (this folder is on sys.path)
from unseen.model import ModelConfig, Transformer
from unseen.pipeline import load_params


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--option", nargs="+", default=["qk_norm=true"], help="FIELD=VALUE of ModelConfig, the value in YAML")
    ap.add_argument("--seq", type=int, default=36, help="padded length of a batch (the default task's mean)")
    ap.add_argument("--targets", type=int, default=13); ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=150)
    args = ap.parse_args()
    torch.set_num_threads(1)
    options = {k: yaml.safe_load(v) for k, v in (o.split("=", 1) for o in args.option)}
    spec = load_params()["train"]["model"]
    configs = {"params.yaml": ModelConfig(vocab_size=1110, max_len=args.seq + 8, **spec),     # n_train 1000: 1,110 tokens
               ", ".join(args.option): ModelConfig(vocab_size=1110, max_len=args.seq + 8, **{**spec, **options})}
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)
    batch = task_batch(args.batch, args.seq, args.targets, 1110)
    runs = {}
    for name, cfg in configs.items():
        torch.manual_seed(0); runs[name] = (step_fn(Transformer(cfg), False, autocast), batch)
    elapsed = time_alternately(runs, args.steps)
    base = elapsed["params.yaml"]
    print(f"{args.seq} tokens a problem, {args.targets} targets, batch {args.batch}, bfloat16 autocast, 1 thread, {args.steps} steps each")
    for name in runs:
        print(f"{name:<28}{elapsed[name] / args.steps * 1e3:7.1f} ms/step  {elapsed[name] / base:.2f}x the params.yaml step")


if __name__ == "__main__":
    main()
