"""The training step's speed-ups, each measured against the plain eager step in one process.

    python benchmarks/train_step.py [--steps 100] [--data runs/data/n1000/train.safetensors]
    python benchmarks/train_step.py --device cuda --d-model 768 --layers 10 --heads 12 --batch 256 --seq 40   # paper scale

The pipeline's model (params.yaml: d_model 64, 2 layers, 4 heads of 32, 1,110 names) takes AdamW steps
on real batches of the task (lengths as generated: `--data`, or 20,000 problems generated here from
params.yaml's `generate` section), bf16 autocast, one thread on a CPU. Seven steps take turns on the
same batches, each adding one change to the one before, so every ratio is against the reference
measured in the same loop (machines here are noisy: the ratio is what counts):

    reference    eager; SDPA attention in float32 inside the bf16 step; padded batches; AdamW's foreach loop
    + matmul     attention as two batched matrix products in bf16 (`unseen.model.attend`)
    + packing    per-token layers on the real tokens only (`unseen.model.Packing`, `unseen.train.packed_batch`)
    + fused      AdamW's fused kernel (`unseen.train.build_optimizer`)
    + compile    the loss and its gradient under torch.compile, dynamic shapes (`unseen.train.compiled`)
    + scatter    the packed rows put back in the padded layout by writing them into place (`unseen.model.Packing.pad`),
                 not by a gather whose gradient is a scatter-add: the same bytes as `+ compile`
    + pick       the loss as the targets' log-probabilities picked out (`unseen.train.target_loss`), not
                 `F.cross_entropy`, whose compiled backward compares every row with every name: the same bytes
                 again, and the pipeline's step

The first compiled step's time (compilation, or a hit in inductor's on-disk cache) is printed apart.
`--seq N` draws random token batches of N tokens instead (every row full: no packing gain), for sizes
with no dataset here.
"""
import argparse, contextlib, math, tempfile, time
from dataclasses import dataclass
from unittest import mock

import torch
import torch.nn.functional as F

import unseen.model
from unseen.model import ModelConfig, Packing, Transformer
from unseen.train import ANSWERS, TrainConfig, batch_at, build_optimizer, compiled, packed_batch, target_loss

VARIANTS = ("reference", "+ matmul", "+ packing", "+ fused", "+ compile", "+ scatter", "+ pick")


def sdpa_attend(q, k, v, is_causal: bool):
    "The reference's attention: SDPA in float32 under a CPU's bf16 autocast (its bf16 backward is slower still)."
    if q.device.type != "cpu" or not torch.is_autocast_enabled("cpu"): return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    with torch.autocast("cpu", enabled=False):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=is_causal).to(q.dtype)


@dataclass
class GatherPacking(Packing):
    "A `Packing` put back in the padded layout by a gather: each position's row among the N, or a row of zeros."
    rows: torch.Tensor | None = None    # (B*T,) each position's row among the N, or N (the row of zeros)

    @classmethod
    def of_packing(cls, packing: Packing) -> "GatherPacking":
        rows = torch.full((packing.shape[0] * packing.shape[1],), len(packing.keep), dtype=torch.long, device=packing.keep.device)
        rows[packing.keep] = torch.arange(len(packing.keep), device=packing.keep.device)
        return cls(packing.keep, packing.shape, rows)

    def pad(self, x):
        return torch.cat([x, x.new_zeros(1, *x.shape[1:])])[self.rows].view(*self.shape, *x.shape[1:])


def cross_entropy_loss(model, inputs, labels, answer_weight: float = 1.0, at=None, packing: Packing | None = None):
    "`unseen.train.target_loss` by `F.cross_entropy`, as before `+ pick`."
    if at is None: at = (labels != -100).flatten().nonzero()[:, 0]
    targets = labels.flatten()[at]
    logits = model(inputs, at=at) if packing is None else model(inputs, at=at, packing=packing)
    weight = (targets != -100).float()
    if answer_weight != 1: weight = weight * (1 + (answer_weight - 1) * torch.isin(targets, ANSWERS.to(targets.device)).float())
    return (F.cross_entropy(logits.float(), targets, reduction="none") * weight).sum() / weight.sum(), logits


def sync(device: str):
    "Wait for the device's queued work (CUDA is asynchronous), so host clocks time it."
    if device.startswith("cuda"): torch.cuda.synchronize()


def real_batches(path, n: int, batch: int) -> list:
    "The first `n` training batches of seed 0 from the dataset at `path`, or from 20,000 problems generated as params.yaml says."
    from pathlib import Path
    from unseen.datasets import DataConfig, generate_datasets, load_sequences
    from unseen.pipeline import load_params
    if not Path(path).exists():
        p = load_params("params.yaml")
        cfg = DataConfig.from_dict({**p["generate"], "n_train": p["base"]["n_train"], "train_problems": 20_000,
                                    "test_problems": 10, "valid_problems": 10})
        path = Path(tempfile.mkdtemp()) / "data"
        generate_datasets(cfg, seed=0, out_dir=path, progress=False)
        path = path / "train.safetensors"
    seqs = load_sequences(path)
    return [batch_at(seqs, 0, step, batch) for step in range(1, n + 1)]


def make_step(variant: str, cfg: ModelConfig, device: str, autocast):
    "One training step (loss, backward, clipping, AdamW) with the changes up to `variant`; the same initial weights for all."
    level = VARIANTS.index(variant)
    torch.manual_seed(0)
    model = Transformer(cfg).to(device)
    opt = build_optimizer(model, TrainConfig(device=device)) if level >= 3 else torch.optim.AdamW(
        [{"params": [p for p in model.parameters() if p.ndim >= 2], "weight_decay": 0.1},
         {"params": [p for p in model.parameters() if p.ndim < 2], "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95))
    loss_fn = target_loss if level >= 6 else cross_entropy_loss
    loss_of = compiled(loss_fn) if level >= 4 else loss_fn
    attention = unseen.model.attend if level >= 1 else sdpa_attend
    def step(inputs, labels):
        with mock.patch.object(unseen.model, "attend", attention), autocast:
            if level >= 2:
                packing, at = packed_batch(inputs, labels)
                loss, _ = loss_of(model, inputs, labels, 1.0, at, packing if level >= 5 else GatherPacking.of_packing(packing))
            else: loss, _ = loss_of(model, inputs, labels, 1.0)                       # the padded batch
        opt.zero_grad(set_to_none=True); loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()
    return step


def task_batch(n: int, seq: int, targets: float, vocab: int) -> tuple:
    "Random tokens `(n, seq)` and their labels, -100 on all but the last `targets` share (the prompt: context, not targets)."
    x, y = torch.randint(1, vocab, (n, seq)), torch.randint(1, vocab, (n, seq))
    y[:, :seq - round(targets * seq)] = -100
    return x, y


def step_fn(model, hf: bool, autocast):
    "A plain eager AdamW step of `model` (ours, or a Hugging Face model when `hf`) on the targets' loss; the other benchmarks' step."
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    def step(x, y):
        with autocast:
            if hf: loss = F.cross_entropy(model(input_ids=x).logits.flatten(0, 1).float(), y.flatten(), ignore_index=-100)
            else: loss, _ = target_loss(model, x, y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    return step


def time_alternately(runs: dict, steps: int, warmup: int = 10) -> dict:
    "Seconds each `name: (step, (x, y))` of `runs` spends in `steps` steps, the runs taking turns (the first `warmup` untimed)."
    elapsed = dict.fromkeys(runs, 0.0)
    for i in range(steps + warmup):
        for name, (step, (x, y)) in runs.items():
            t = time.perf_counter(); step(x, y)
            if i >= warmup: elapsed[name] += time.perf_counter() - t
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100, help="timed steps per variant, after 5 untimed")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--data", default="runs/data/n1000/train.safetensors", help="a training split (generated here when absent)")
    ap.add_argument("--seq", type=int, default=0, help="random batches of this many tokens instead of the task's")
    ap.add_argument("--vocab", type=int, default=1110, help="with --seq")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=32, help="0: d_model / heads")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--device", default="cpu", help="cpu (one thread) | cuda")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = ap.parse_args()
    device = args.device
    if not device.startswith("cuda"): torch.set_num_threads(1)
    batches = ([task_batch(args.batch, args.seq, 0.4, args.vocab) for _ in range(args.steps + 5)] if args.seq else real_batches(args.data, args.steps + 5, args.batch))
    batches = [(x.to(device), y.to(device)) for x, y in batches]
    vocab = args.vocab if args.seq else 1110
    cfg = ModelConfig(vocab_size=vocab, max_len=max(x.shape[1] for x, _ in batches) + 8, d_model=args.d_model, n_layer=args.layers,
                      n_head=args.heads, head_dim=args.head_dim or None, d_mlp=4 * args.d_model)
    autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=args.dtype == "bfloat16")
    steps = {v: make_step(v, cfg, device, autocast) for v in ["reference"] + [v for v in args.variants if v != "reference"]}
    first, elapsed, losses = {}, dict.fromkeys(steps, 0.0), {v: [] for v in steps}
    for i, (x, y) in enumerate(batches):
        for name, step in steps.items():
            sync(device); t = time.perf_counter(); loss = step(x, y); sync(device)
            if i == 0: first[name] = time.perf_counter() - t
            elif i >= 5: elapsed[name] += time.perf_counter() - t
            losses[name].append(loss.item())
    tokens = sum((y != -100).sum().item() for _, y in batches[5:])
    real = sum((x != 0).sum().item() for x, _ in batches[5:]) / sum(x.numel() for x, _ in batches[5:])
    print(f"model: {Transformer(cfg).n_params():,} parameters, d_model {args.d_model}, {args.layers} layers, {args.heads} heads; "
          f"batch {args.batch}, {'random' if args.seq else 'task'} batches ({real:.0%} of a padded batch are tokens), "
          f"{args.dtype}, {device if device.startswith('cuda') else '1 thread'}, {args.steps} timed steps")
    ref, names = elapsed["reference"], list(steps)
    for before, name in zip([None] + names, names):
        drift = max(abs(a - b) for a, b in zip(losses[name], losses["reference"]))
        same = "; the same losses as the line above" if before and losses[name] == losses[before] else ""
        print(f"{name:<12}{1000 * elapsed[name] / args.steps:8.1f} ms a step  {ref / elapsed[name]:5.2f}x the reference  "
              f"first step {first[name]:6.1f} s  loss at most {drift:.1e} from the reference's{same}")
    print(f"target tokens per second, the last: {tokens / elapsed[list(steps)[-1]]:,.0f}")


if __name__ == "__main__":
    main()
