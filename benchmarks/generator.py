"""Generator throughput, in verified problems per second (sampled, checked by forward chaining, serialised).

    python benchmarks/generator.py [--problems 1000000] [--workers 2]

Machines here are noisy, so every line is also given as a ratio to a reference measured in the
same process: the same library called one problem at a time (what a per-problem generator costs).
"""
import argparse, os, time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from unseen.datasets import DataConfig, CHUNK
from unseen.logic import sample_problems
from unseen.tokens import serialize, draw_names


def generate(cfg: DataConfig, n: int, seed: int, chunk: int = CHUNK) -> int:
    "Sample, verify and serialise `n` problems in chunks; return how many were made."
    made = 0
    for i, child in enumerate(np.random.SeedSequence([seed, 0]).spawn(-(-n // chunk))):
        rng = np.random.default_rng(child)
        batch = sample_problems(cfg.problem, min(chunk, n - i * chunk), rng)
        made += len(serialize(batch, draw_names(rng, cfg.vocab.seen_ids, len(batch), int(batch.n_vars.max())), cfg.cot_format))
    return made


def rate(fn, *args):
    t = time.perf_counter(); n = fn(*args); return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    args = ap.parse_args()
    cfg = DataConfig()
    generate(cfg, 10_000, 0)  # warm up
    reference = rate(generate, cfg, 2_000, 0, 1)
    one = rate(generate, cfg, args.problems, 1)
    with ProcessPoolExecutor(args.workers) as pool:
        list(pool.map(generate, [cfg] * args.workers, [1_000] * args.workers, range(args.workers)))  # start workers
        per = args.problems // args.workers
        t = time.perf_counter()
        made = sum(pool.map(generate, [cfg] * args.workers, [per] * args.workers, range(args.workers)))
        parallel = made / (time.perf_counter() - t)
    print(f"{'one problem at a time (reference)':<40}{reference:>12,.0f} problems/s  1.0x")
    print(f"{f'batched, 1 process':<40}{one:>12,.0f} problems/s  {one / reference:.1f}x")
    print(f"{f'batched, {args.workers} processes':<40}{parallel:>12,.0f} problems/s  {parallel / reference:.1f}x")


if __name__ == "__main__":
    main()
