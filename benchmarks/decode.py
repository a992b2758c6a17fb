"""Greedy decoding with the KV cache against recomputing the whole prefix for every new token.

    python benchmarks/decode.py [--batch 512] [--new 13 21 40] [--model runs/models/standard-s0.safetensors]
    python benchmarks/decode.py --device cuda --params params-paper.yaml     # a fresh paper-scale model on a GPU

Both decode the same batch of equal-length prompts (scenario 1 test problems of `dvc repro generate`)
for the same number of new tokens, in one process and one thread, reading the logits out only at
the last position; the ratio is what counts on a noisy machine. Without `--model`, a fresh model
of the size in params.yaml (`train.model`). One line per generation length: 13 new tokens is the
longest target of the default task, 21 the evaluation's cap (longest target + 8, what a model that
never emits <eos> costs), 40 a longer generation; a trained model stops earlier, once every row has
emitted <eos> (the `generated` column). Each line also prints two ceilings of the ratio: the tokens
the recomputation puts through the model over those the cache does, and the floating-point operations
of the two decodings as PyTorch counts them (`torch.utils.flop_counter`: matmuls and attention). The
second is the tighter: both decodings compute the read-out (d_model x vocabulary) once per new token,
which the token count leaves out, so no implementation of the same model beats it by much.
"""
import argparse, time
from pathlib import Path

import numpy as np
import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from unseen.datasets import load_sequences
from unseen.evaluate import greedy_decode
from unseen.model import ModelConfig, Transformer
from unseen.tokens import Sequences, Vocab


def equal_length_batch(seqs: Sequences, n: int) -> Sequences:
    "`n` problems (repeated if need be) that share the most common prompt length."
    lengths, counts = np.unique(seqs.prompt_len, return_counts=True)
    idx = np.flatnonzero(seqs.prompt_len == lengths[counts.argmax()])
    idx = np.resize(idx, n)
    parts = [seqs.tokens[seqs.offsets[i]:seqs.offsets[i + 1]] for i in idx]
    lens = np.array([len(p) for p in parts])
    return Sequences(np.concatenate(parts), np.concatenate([[0], np.cumsum(lens)]), seqs.prompt_len[idx], seqs.label[idx], seqs.depth[idx])


def decoding_flops(model, seqs: Sequences, n_new: int, use_cache: bool) -> int:
    "Floating-point operations of one greedy decoding of `seqs`, counted by PyTorch."
    # PyTorch has no formula for the CPU attention kernel: give it the generic one, which counts a
    # causal attention as a full one, so it overstates recomputation a little (a higher ceiling)
    sdpa = lambda q, k, v, *args, out_shape=None, **kwargs: sdpa_flop_count(q, k, v)
    with FlopCounterMode(display=False, custom_mapping={torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: sdpa}) as counter:
        greedy_decode(model, seqs, batch_size=len(seqs), max_new_tokens=n_new, use_cache=use_cache)
    return counter.get_total_flops()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--new", type=int, nargs="+", default=[13, 21, 40], help="new tokens per prompt, one measurement per value")
    ap.add_argument("--data", default="", help="default: runs/data/n{base.n_train}/test_s1.safetensors")
    ap.add_argument("--model", default="", help="trained weights (default: a fresh model of the size in --params)")
    ap.add_argument("--params", default="params.yaml", help="parameters file whose train.model sizes a fresh model")
    ap.add_argument("--device", default="cpu", help="cpu (one thread) | cuda")
    args = ap.parse_args()
    if args.device == "cpu": torch.set_num_threads(1)
    params = yaml.safe_load(Path(args.params).read_text())
    seqs = equal_length_batch(load_sequences(args.data or f"runs/data/n{params['base']['n_train']}/test_s1.safetensors"), args.batch)
    if args.model:
        from unseen.train import load_model
        model = load_model(args.model)
    else:
        vocab = Vocab(params["base"]["n_train"], params["generate"]["n_unseen"])
        model = Transformer(ModelConfig(vocab_size=len(vocab), **params["train"]["model"]))
    model.to(args.device)
    L = int(seqs.prompt_len[0])
    where = "1 thread" if args.device == "cpu" else args.device
    print(f"{args.batch} prompts of {L} tokens, {where}, {model.n_params():,} parameters")
    print(f"{'at most':>8}{'generated':>11}{'recompute':>12}{'KV cache':>12}{'ratio':>8}{'ceiling: tokens':>17}{'FLOPs':>7}")
    for n_new in args.new:
        times = {True: [], False: []}
        for use_cache in (True, False) * 3:    # alternate; the first of each warms up, the best of the other two counts
            t = time.perf_counter()
            out = greedy_decode(model, seqs, batch_size=args.batch, max_new_tokens=n_new, use_cache=use_cache)  # ends on the host: synchronised
            times[use_cache].append(time.perf_counter() - t)
        times = {k: min(v[1:]) for k, v in times.items()}
        steps = int((out.lengths - out.prompt_len).max())      # decoding stops once every row has emitted <eos>
        recomputed, cached = sum(L + t for t in range(steps)), L + steps - 1   # tokens through the model per problem
        flops = decoding_flops(model, seqs, n_new, False) / decoding_flops(model, seqs, n_new, True)
        print(f"{n_new:>8}{steps:>11}{times[False]:>10.3f} s{times[True]:>10.3f} s{times[False] / times[True]:>7.1f}x{recomputed / cached:>16.1f}x{flops:>6.1f}x")


if __name__ == "__main__":
    main()
