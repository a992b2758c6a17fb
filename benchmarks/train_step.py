"""Training throughput of our transformer against Hugging Face's GPT2LMHeadModel at equal dimensions.

    python benchmarks/train_step.py [--steps 30] [--batch 64] [--seq 40] [--dtype float32]

Both models take AdamW steps on the same random batches, alternately, in one process and one
thread (machines here are noisy: the ratio is what counts). The fp32 matmul rate of this
machine is measured in the same run, and each step's useful work (6 x parameters x tokens, plus
attention) is given as a fraction of it.
"""
import argparse, time

import torch
import torch.nn.functional as F

from unseen.model import ModelConfig, Transformer


def matmul_rate(n=1024, repeat=10) -> float:
    "fp32 matrix-multiply rate of this machine, FLOP/s."
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(repeat): a @ b
    return 2 * n ** 3 * repeat / (time.perf_counter() - t)


def gpt2(cfg: ModelConfig):
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=cfg.vocab_size, n_positions=cfg.max_len, n_embd=cfg.d_model, n_layer=cfg.n_layer,
                                      n_head=cfg.n_head, n_inner=cfg.d_mlp, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                      tie_word_embeddings=True))


def step_fn(model, hf: bool, autocast):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    def step(x, y):
        with autocast:
            logits = model(input_ids=x).logits if hf else model(x)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=40)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = ModelConfig(vocab_size=210, max_len=64, positions="learned")   # GPT-2 has learned positions
    ours, theirs = Transformer(cfg), gpt2(cfg)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.dtype == "bfloat16")
    steps = {"ours": step_fn(ours, False, autocast), "GPT2LMHeadModel": step_fn(theirs, True, autocast)}
    batches = [(torch.randint(0, 210, (args.batch, args.seq)), torch.randint(0, 210, (args.batch, args.seq))) for _ in range(4)]
    elapsed = {k: 0.0 for k in steps}
    for i in range(args.steps + 3):
        for name, step in steps.items():
            t = time.perf_counter(); step(*batches[i % 4])
            if i >= 3: elapsed[name] += time.perf_counter() - t      # the first steps warm up
    rate = matmul_rate()
    tokens = args.batch * args.seq * args.steps
    n_params = ours.n_params()
    flops = tokens * (6 * n_params + 12 * cfg.n_layer * args.seq * cfg.d_model)   # per-token attention scores and sums
    tps = {k: tokens / v for k, v in elapsed.items()}
    print(f"model: {n_params:,} parameters (GPT-2: {theirs.num_parameters():,}), batch {args.batch} x {args.seq} tokens, {args.dtype}, 1 thread")
    print(f"fp32 matmul rate (1024^3, 1 thread): {rate / 1e9:.1f} GFLOP/s")
    for name in steps:
        print(f"{name:<18}{tps[name]:>10,.0f} tokens/s  {tps[name] / tps['GPT2LMHeadModel']:.2f}x GPT2  "
              f"{flops / elapsed[name] / rate:.1%} of the matmul rate")


if __name__ == "__main__":
    main()
