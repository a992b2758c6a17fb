"""The `finetune` stage's core-minutes, estimated from measured per-step and per-evaluation costs and a log of earlier runs.

    python benchmarks/finetune_cost.py --step-s 1.1 --eval-s 8.9 [--log runs/finetune/log.csv] [--params params.yaml]

A run costs its optimiser steps times `--step-s` plus its evaluations, each `--eval-s` for every held-out problem
(`benchmarks/finetune_step.py` measures both) or the share of them an early-stopped evaluation reads. The log says,
per run, where the endpoints were crossed and what the metrics were at each evaluation (read as the shares the
128 problems will show); a run stops once every endpoint of `--params` has crossed, or at its budget. Where the log
stops before an endpoint is crossed (its runs stopped at an earlier rule), the run is counted to the log's last
step: a lower bound on that run. An evaluation is stopped early (eval_screen) once no endpoint still to cross can
cross, expected after max over those endpoints of (wrong problems needed) / (share wrong), in whole eval_batch.
Prints the mean cost of one run (one seed) per condition, and the stage's total for the params' seed counts.
"""
import argparse, math
from pathlib import Path

import pandas as pd
import yaml

from unseen.finetune_run import FinetuneConfig


def scored_problems(shares: dict, need: dict, n: int, batch: int) -> int:
    "Problems an evaluation reads: all if some endpoint still to cross crosses here, else until none can (expected, whole chunks)."
    if not need or any(shares[m] >= t for m, t in need.items()): return n
    k = max((math.floor(n * (1 - t)) + 1) / max(1 - shares[m], 1e-9) for m, t in need.items())
    return min(n, batch * math.ceil(k / batch))


def run_cost(run: pd.DataFrame, cfg: FinetuneConfig, n: int, step_s: float, eval_s: float, screen: bool) -> dict:
    "Steps, evaluations, problems read and seconds of one run of the log under `cfg`'s endpoints and schedule."
    endpoints, crossed, evals, problems, last = cfg.endpoints(), set(), 0, 0, 0
    by_step = run.set_index("step")
    for step in cfg.eval_steps():
        if step > by_step.index.max(): break               # beyond the log: counted to its last step
        row = by_step.loc[by_step.index[by_step.index <= step].max()]   # the log's nearest evaluation at or before
        shares = {m: float(row[m]) for m in endpoints}
        need = {m: t for m, t in endpoints.items() if m not in crossed}
        problems += scored_problems(shares, need if screen else {}, n, cfg.eval_batch)
        evals, last = evals + 1, step
        crossed |= {m for m, t in endpoints.items() if shares[m] >= t}
        if crossed == set(endpoints) and cfg.stop_at_threshold: break
    return {"steps": last, "evaluations": evals, "problems": problems, "all_crossed": crossed == set(endpoints),
            "seconds": last * step_s + problems / n * eval_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", default="runs/finetune/log.csv")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--step-s", type=float, required=True, help="seconds of one optimiser step")
    ap.add_argument("--eval-s", type=float, required=True, help="seconds of one evaluation of every held-out problem")
    ap.add_argument("--no-screen", action="store_true", help="every evaluation reads every problem")
    args = ap.parse_args()
    p = yaml.safe_load(Path(args.params).read_text())["finetune"]
    cfg = FinetuneConfig(**p["training"])
    log = pd.read_csv(args.log)
    rows = [{"condition": c, "seed": s, **run_cost(d, cfg, p["eval_problems"], args.step_s, args.eval_s, cfg.eval_screen and not args.no_screen)}
            for (c, s), d in log.groupby(["condition", "seed"], sort=False)]
    runs = pd.DataFrame(rows)
    per = runs.groupby("condition", sort=False).agg(runs=("seed", "size"), steps=("steps", "mean"), evaluations=("evaluations", "mean"),
                                                    problems=("problems", "mean"), lower_bounds=("all_crossed", lambda x: int((~x).sum())),
                                                    seconds=("seconds", "mean"))
    per["seeds"] = [p["conditions"].get(c, {}).get("n_seeds", p["n_seeds"]) if c in p["conditions"] else 0 for c in per.index]
    per["stage_minutes"] = per["seeds"] * per["seconds"] / 60
    print(f"{args.log}: {len(runs)} runs; endpoints {cfg.endpoints()}, budget {cfg.steps}; step {args.step_s} s, "
          f"evaluation of {p['eval_problems']} problems {args.eval_s} s, screened: {cfg.eval_screen and not args.no_screen}")
    print(per.round(1).to_string())
    print(f"one seed of every condition: {per['seconds'].sum() / 60:.1f} min; the stage with the params' seeds: "
          f"{per['stage_minutes'].sum():.1f} core-minutes (lower_bounds: runs whose log ends before every endpoint crossed)")


if __name__ == "__main__":
    main()
