"""Steps to the threshold under another learning rate: would a faster rate make the `finetune` stage cheaper?

The stage's task, model, pools, held-out problems and recipe (params.yaml) with `training.lr` set to LR, one run seed
per process (seeds run side by side on separate cores), every condition or those named:

    python tuning/finetune/lr_probe.py run LR SEED [CONDITION ...]  # -> tuning/finetune/lr/lrLR-sSEED[-CONDITION...]-log.csv
    python tuning/finetune/lr_probe.py summary                     # -> lr/summary.md: steps per run beside the stage's

The stage's own runs (runs/finetune/thresholds.csv) are the params.yaml rows of the summary.
"""
import argparse
from pathlib import Path

import pandas as pd

from probe import run_probe
from unseen.pipeline import load_params

OUT = Path(__file__).parent / "lr"


def run(lr: float, seed: int, names=()):
    "One run of each condition (or of those named) at run seed `seed` with learning rate `lr`."
    conditions = {k: v for k, v in load_params()["finetune"]["conditions"].items() if k in names or not names}
    tag = f"lr{lr:g}-s{seed}" + "".join(f"-{n}" for n in names)
    run_probe({"lr": lr}, conditions, seed, OUT / f"{tag}-log.csv", OUT / f"{tag}-runs.csv", lr=lr)


def summary():
    "Steps until the stage's threshold per learning rate, condition and seed (`>N`: not reached by step N)."
    from unseen.finetune_report import steps_to_threshold
    params = load_params()["finetune"]["training"]
    metric, threshold, budget = params["threshold_metric"], params["threshold"], params["steps"]
    stage = pd.read_csv("runs/finetune/thresholds.csv").query("metric == @metric").assign(lr=params["lr"])
    probes = [steps_to_threshold(g, metric, threshold, budget).assign(lr=lr)
              for lr, g in pd.concat([pd.read_csv(p) for p in sorted(OUT.glob("lr*-log.csv"))]).groupby("lr")]
    st = pd.concat([stage, *probes], ignore_index=True)
    st["read"] = [f">{s}" if c else str(s) for s, c in zip(st["steps"], st["censored"])]
    table = st.pivot_table(index=["condition", "seed"], columns="lr", values="read", aggfunc="first").fillna("")
    text = (f"Steps until held-out `{metric}` >= {threshold} (budget {budget}; `>N`: not reached by step N), by "
            f"learning rate (columns; {params['lr']:g}: the stage, runs/finetune/thresholds.csv):\n\n" + table.to_markdown() + "\n")
    (OUT / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["run", "summary"]); ap.add_argument("lr", type=float, nargs="?")
    ap.add_argument("seed", type=int, nargs="?"); ap.add_argument("conditions", nargs="*")
    args = ap.parse_args()
    if args.what == "run" and (args.lr is None or args.seed is None): ap.error("run needs LR and SEED")
    run(args.lr, args.seed, args.conditions) if args.what == "run" else summary()
