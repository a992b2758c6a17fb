"""Training throughput of our transformer against Hugging Face's GPT2LMHeadModel at equal dimensions.

    python benchmarks/train_step.py [--steps 200] [--batch 64] [--seq 40] [--d-model 64] [--vocab 1110] [--targets 0.4]
    python benchmarks/train_step.py --device cuda --dtype bfloat16 --d-model 768 --layers 10 --heads 12 --batch 256   # paper scale

Both models take AdamW steps on the same random batches, alternately, in one process and one
thread (machines here are noisy: the ratio is what counts), on the project's objective: the loss
counts only the last `--targets` fraction of each sequence (the chain of thought and answer; the
prompt is context). GPT2LMHeadModel gets labels -100 elsewhere, as its API expects; ours reads
the logits out only at the targets (`target_loss`). The defaults are the CPU pipeline's model
(params.yaml: d_model 64, 2 layers, n_train 1000 seen + 100 unseen names). The fp32 matmul rate of
this machine is measured in the same run, and each step's useful work (6 x parameters x tokens,
plus attention) is given as a fraction of it; `--targets 1` is the plain language-model step.
On CUDA the matmul rate is measured in the run's dtype (fp32 without TF32, or bf16) on 4096^3 products.
With `--dtype bfloat16` our model also trains in float32 in the same loop: the last line is what bf16 buys.
"""
import argparse, contextlib, time

import torch
import torch.nn.functional as F

from unseen.model import ModelConfig, Transformer
from unseen.train import target_loss


def sync(device: str):
    "Wait for the device's queued work (CUDA is asynchronous), so host clocks time it."
    if device.startswith("cuda"): torch.cuda.synchronize()


def matmul_rate(n=1024, repeat=10, device="cpu", dtype=torch.float32) -> float:
    "Matrix-multiply rate of this device in `dtype`, FLOP/s."
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    a @ b; sync(device)
    t = time.perf_counter()
    for _ in range(repeat): a @ b
    sync(device)
    return 2 * n ** 3 * repeat / (time.perf_counter() - t)


def gpt2(cfg: ModelConfig):
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=cfg.vocab_size, n_positions=cfg.max_len, n_embd=cfg.d_model, n_layer=cfg.n_layer,
                                      n_head=cfg.n_head, n_inner=cfg.d_mlp, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                      tie_word_embeddings=True))


def task_batch(n: int, seq: int, targets: int, vocab: int) -> tuple:
    "Random tokens `(n, seq)` and their labels, -100 on all but the last `targets` (the prompt: context, not targets)."
    x, y = torch.randint(0, vocab, (n, seq)), torch.randint(0, vocab, (n, seq))
    y[:, :seq - targets] = -100
    return x, y


def time_alternately(runs: dict, steps: int, warmup: int = 10) -> dict:
    "Seconds each `name: (step, (x, y))` of `runs` spends in `steps` steps, the runs taking turns (the first `warmup` untimed)."
    elapsed = dict.fromkeys(runs, 0.0)
    for i in range(steps + warmup):
        for name, (step, (x, y)) in runs.items():
            t = time.perf_counter(); step(x, y)
            if i >= warmup: elapsed[name] += time.perf_counter() - t
    return elapsed


def step_fn(model, hf: bool, autocast):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    def step(x, y):
        with autocast:
            if hf: loss = F.cross_entropy(model(input_ids=x).logits.flatten(0, 1).float(), y.flatten(), ignore_index=-100)
            else: loss, _ = target_loss(model, x, y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="timed steps per model (at 30 the ratio varied 1.47-1.71x on this noisy 2-core machine, at 200 1.54-1.57x)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=40)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--device", default="cpu", help="cpu (one thread) | cuda")
    ap.add_argument("--vocab", type=int, default=1110)
    ap.add_argument("--targets", type=float, default=0.4, help="fraction of each sequence in the loss (the task: ~13 of ~31 tokens)")
    args = ap.parse_args()
    device, cuda = args.device, args.device.startswith("cuda")
    if not cuda: torch.set_num_threads(1)
    cfg = ModelConfig(vocab_size=args.vocab, max_len=max(64, args.seq), positions="learned", d_model=args.d_model, n_layer=args.layers,
                      n_head=args.heads, d_mlp=4 * args.d_model)   # GPT-2 has learned positions
    autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=args.dtype == "bfloat16")
    def batch():
        x, y = torch.randint(0, args.vocab, (args.batch, args.seq)), torch.randint(0, args.vocab, (args.batch, args.seq))
        y[:, :args.seq - round(args.targets * args.seq)] = -100                   # the prompt: context, not targets
        return x.to(device), y.to(device)
    ours, theirs = Transformer(cfg).to(device), gpt2(cfg).to(device)
    steps = {"ours": step_fn(ours, False, autocast), "GPT2LMHeadModel": step_fn(theirs, True, autocast)}
    if args.dtype == "bfloat16":   # the reference for what autocast buys: the same model in float32
        steps["ours, float32"] = step_fn(Transformer(cfg).to(device), False, contextlib.nullcontext())
    batches = [batch() for _ in range(4)]
    elapsed = {k: 0.0 for k in steps}
    for i in range(args.steps + 3):
        for name, step in steps.items():
            sync(device); t = time.perf_counter(); step(*batches[i % 4]); sync(device)
            if i >= 3: elapsed[name] += time.perf_counter() - t      # the first steps warm up
    dtype = torch.bfloat16 if args.dtype == "bfloat16" and cuda else torch.float32   # CPU autocast: fp32 is the reference
    rate = matmul_rate(4096, 20, device, dtype) if cuda else matmul_rate()
    tokens = args.batch * args.seq * args.steps
    n_params = ours.n_params()
    readout = args.vocab * cfg.d_model                  # the tied (V, C) matrix: useful work only where the loss is
    flops = tokens * (6 * (n_params - readout + readout * args.targets) + 12 * cfg.n_layer * args.seq * cfg.d_model)
    tps = {k: tokens / v for k, v in elapsed.items()}
    print(f"model: {n_params:,} parameters (GPT-2: {theirs.num_parameters():,}), batch {args.batch} x {args.seq} tokens "
          f"({args.targets:.0%} targets), vocabulary {args.vocab}, {args.dtype}, " + (device if cuda else "1 thread"))
    where = f"{torch.cuda.get_device_name()}, 4096^3" if cuda else "1024^3, 1 thread"
    print(f"{str(dtype).removeprefix('torch.')} matmul rate ({where}): {rate / 1e9:,.1f} GFLOP/s")
    for name in steps:
        print(f"{name:<18}{tps[name]:>10,.0f} tokens/s  {tps[name] / tps['GPT2LMHeadModel']:.2f}x GPT2  "
              f"{flops / elapsed[name] / rate:.1%} of the matmul rate")
    if "ours, float32" in steps: print(f"ours, bfloat16 / float32: {tps['ours'] / tps['ours, float32']:.2f}x")


if __name__ == "__main__":
    main()
