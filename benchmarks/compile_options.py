"""What other `torch.compile` settings would give the pipeline's step, and whether they keep its bytes.

    python benchmarks/compile_options.py [--steps 200] [--dtype bfloat16] [--data runs/data/n1000/train.safetensors]

The pipeline's step (`unseen.train.step_function`: packed batch, attention as matrix products, the loss and
its gradient under `unseen.train.compiled`, i.e. `torch.compile(dynamic=True)` with Python floats as constants,
fused AdamW, bf16 autocast or float32, one thread) against the same step compiled with one option changed, on the
same real batches (lengths as generated), taking turns:

    cpp wrapper          inductor calls its kernels from generated C++ instead of Python (`cpp_wrapper`)
    floats as symbols    Dynamo's default (`specialize_float=False`): the modules' floats (LayerNorm's eps,
                         dropout's p) become symbols that cannot be turned into tensors, and Dynamo traces the loss
                         a second time on the first step
    static, one shape    `dynamic=False`, every step on the same batch (all variants then use that batch too):
                         a bound for compiling per length bucket, which would also compile once per bucket

Each variant starts from the same weights; "same bytes" says whether its losses over every step and its
weights at the end equal the pipeline step's, bit for bit: a variant that does not keep them could only be
adopted by regenerating every committed result. The first step's seconds are compilation (or a hit in
inductor's on-disk cache, which the pipeline's own runs leave warm).
"""
import argparse, hashlib, time, types

import torch

from train_step import real_batches   # this folder is on sys.path
from unseen.model import ModelConfig, Transformer
from unseen.train import TrainConfig, build_optimizer, packed_batch, target_loss


def make_step(cfg: ModelConfig, autocast, dynamic=True, options=None, specialize_float=True):
    "The pipeline's step under `torch.compile(dynamic=..., options=...)`, floats as constants (as `unseen.train.compiled`) or symbols; the same initial weights for all."
    torch.manual_seed(0)
    net = Transformer(cfg)
    opt = build_optimizer(net, TrainConfig(device="cpu"))
    # a copy of the loss with its own code object: Dynamo keeps compiled code per code object, and would hand
    # every variant the first one's
    fn = types.FunctionType(target_loss.__code__.replace(), target_loss.__globals__, target_loss.__name__,
                            target_loss.__defaults__, target_loss.__closure__)
    loss_of = torch.compile(fn, dynamic=dynamic, options=options or {})
    def step(inputs, labels):
        packing, at = packed_batch(inputs, labels)
        with autocast, torch._dynamo.config.patch(specialize_float=specialize_float):
            loss, _ = loss_of(net, inputs, labels, 1.0, at, packing)
        opt.zero_grad(set_to_none=True); loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        return loss.detach()
    step.net = net
    return step


def weights_md5(net) -> str:
    "An md5 of every weight's bytes, in order."
    h = hashlib.md5()
    for t in net.state_dict().values(): h.update(t.detach().float().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="timed steps per variant, after 10 untimed")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"], help="bf16 autocast (params.yaml) or float32")
    ap.add_argument("--data", default="runs/data/n1000/train.safetensors", help="a training split (generated here when absent)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    batches = real_batches(args.data, args.steps + 10, 64)
    cfg = ModelConfig(vocab_size=1110, max_len=max(x.shape[1] for x, _ in batches) + 8, d_model=64, n_layer=2, n_head=4,
                      head_dim=32, d_mlp=256)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.dtype == "bfloat16")
    groups = {   # variants timed against the pipeline's step on the same batches
        "real batches": (batches, {"pipeline": {}, "cpp wrapper": {"options": {"cpp_wrapper": True}},
                                   "floats as symbols": {"specialize_float": False}}),
        "one batch, repeated": ([batches[0]] * len(batches), {"pipeline": {}, "static, one shape": {"dynamic": False}}),
    }
    for title, (data, variants) in groups.items():
        steps = {name: make_step(cfg, autocast, **kw) for name, kw in variants.items()}
        first, elapsed, losses = {}, dict.fromkeys(steps, 0.0), {n: [] for n in steps}
        for i, (x, y) in enumerate(data):
            for name, step in steps.items():
                t = time.perf_counter(); loss = step(x, y); took = time.perf_counter() - t
                if i == 0: first[name] = took
                elif i >= 10: elapsed[name] += took
                losses[name].append(loss.item())
        print(f"{title}: {args.steps} timed steps each, 1 thread, {'bf16 autocast' if args.dtype == 'bfloat16' else 'float32'}")
        ref = elapsed["pipeline"]
        for name, step in steps.items():
            same = losses[name] == losses["pipeline"] and weights_md5(step.net) == weights_md5(steps["pipeline"].net)
            print(f"  {name:<20}{1000 * elapsed[name] / args.steps:7.1f} ms a step  {ref / elapsed[name]:5.3f}x the pipeline's  "
                  f"first step {first[name]:5.1f} s  same bytes: {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
