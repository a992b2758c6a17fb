"""What bfloat16 costs on this CPU against float32: the pipeline's training step and the fine-tuning step, in one process.

    python benchmarks/dtype_cost.py [--steps 30] [--finetune-steps 2] [--out DIR]

params.yaml trains in bfloat16 (`base.dtype`, autocast) and fine-tunes Gemma 3 270M in pure bfloat16 weights
(`finetune.training.dtype`): on a CPU with native bfloat16 instructions (AVX-512 BF16 or AMX on x86,
`unseen.config.native_bf16`) that is faster than float32. Without them (AVX2 only: AMD Zen 2 and 3, many
cluster nodes) every bfloat16 product is emulated. This prints which kind of CPU this is, then times, taking
turns so the ratio holds on a noisy machine:

    training     `unseen.train.step_function`, compiled as the pipeline runs it, from the same weights on the same
                 real batches (params.yaml's model and generate section), bfloat16 autocast against float32
    fine-tuning  one optimiser step of `unseen.finetune_run.finetune`'s loop on Gemma 3 270M (params.yaml's finetune
                 section, letters as names), bfloat16 weights against float32 (`--finetune-steps 0`: skipped;
                 without native bfloat16 a step takes minutes)

The first training step of each (compilation, or inductor's on-disk cache) is printed apart. `--out DIR` writes
the numbers as DIR/dtype-cost.json, a new file (an existing one stops it before anything runs).
"""
import argparse, json, sys, time
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from train_step import real_batches

from unseen.config import native_bf16
from unseen.model import ModelConfig, Transformer
from unseen.train import TrainConfig, build_optimizer, step_function

DTYPES = ("bfloat16", "float32")


def training_steps(batches) -> dict:
    "dtype -> (first step s, mean of the later steps s): the pipeline's compiled step in each dtype, taking turns."
    steps = {}
    for dtype in DTYPES:
        torch.manual_seed(0)
        net, cfg = Transformer(ModelConfig()), TrainConfig(dtype=dtype)
        steps[dtype] = step_function(net, build_optimizer(net, cfg), cfg)
    first, later = {}, dict.fromkeys(DTYPES, 0.0)
    for i, (x, y) in enumerate(batches):
        for dtype, step in steps.items():
            t = time.perf_counter(); step(x, y, 1e-3); t = time.perf_counter() - t
            if i == 0: first[dtype] = t
            else: later[dtype] += t
    return {d: (first[d], later[d] / (len(batches) - 1)) for d in DTYPES}


def finetune_steps(params: dict, n: int) -> dict:
    "dtype -> mean seconds of `n` fine-tuning steps after one untimed, each dtype's model from the same GGUF, taking turns."
    from unseen.finetune_experiment import load_experiment, parse_conditions, prepare_conditions
    from unseen.finetune_run import finetune_step, trainable
    p, runs = params["finetune"], {}
    for dtype in DTYPES:
        exp = load_experiment(p["model"], {**p["training"], "threads": 1, "dtype": dtype}, p["problem"], p["n_names"], 8, 0,
                              "cpu", p.get("cache_dir", "~/.cache/unseen/finetune"))
        net, task, cfg = exp.model, exp.task, exp.cfg
        pool = prepare_conditions(exp.tokenizer, parse_conditions({"letters": {"pool": "letters"}}), task, task.seed)[0].pool
        rows, trained, opt = trainable(net, task, pool, cfg)   # as `finetune` sets up a run
        runs[dtype] = lambda s, a=(net, rows, task, pool, opt, trained, cfg): finetune_step(*a[:6], a[6], s)
    torch.set_num_threads(1)
    seconds = dict.fromkeys(DTYPES, 0.0)
    for s in range(1, n + 2):
        for dtype, step in runs.items():
            t = time.perf_counter(); step(s); t = time.perf_counter() - t
            if s > 1: seconds[dtype] += t
            print(f"  fine-tuning step {s} ({dtype}): {t:.1f} s{'  (untimed)' if s == 1 else ''}", flush=True)
    return {d: seconds[d] / n for d in DTYPES}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--steps", type=int, default=30, help="timed training steps per dtype, after the first")
    ap.add_argument("--data", default="runs/data/n1000/train.safetensors", help="a training split (generated here when absent)")
    ap.add_argument("--finetune-steps", type=int, default=2, help="timed fine-tuning steps per dtype, after one untimed (0: none)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = Path(args.out) / "dtype-cost.json" if args.out else None
    if out and out.exists(): ap.error(f"{out} exists: name another --out folder (this script writes only a new file)")
    torch.set_num_threads(1)
    params = yaml.safe_load(Path(args.params).read_text())
    native = native_bf16("cpu")
    print(f"CPU: {torch.backends.cpu.get_cpu_capability()} kernels; native bfloat16 (AVX-512 BF16 or AMX on x86): {'yes' if native else 'no'}; 1 thread")
    train = training_steps(real_batches(args.data, args.steps + 1, 64))
    for dtype, (first, step) in train.items():
        print(f"training step     {dtype:9} {1000 * step:8.1f} ms  first step {first:5.1f} s")
    print(f"training step     bfloat16 takes {train['bfloat16'][1] / train['float32'][1]:.2f}x the float32 step")
    tune = finetune_steps(params, args.finetune_steps) if args.finetune_steps else {}
    for dtype, s in tune.items(): print(f"fine-tuning step  {dtype:9} {s:8.2f} s")
    if tune: print(f"fine-tuning step  bfloat16 takes {tune['bfloat16'] / tune['float32']:.2f}x the float32 step")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        row = {"cpu": torch.backends.cpu.get_cpu_capability(), "native_bf16": native, "training_steps": args.steps,
               "training_step_s": {d: s for d, (_, s) in train.items()}, "first_step_s": {d: f for d, (f, _) in train.items()},
               "finetune_steps": args.finetune_steps, "finetune_step_s": tune}
        out.write_text(json.dumps(row, indent=1) + "\n")


if __name__ == "__main__":
    main()
