"""Steps until fine-tuning learns the whole target (derived names *and* the True/False answer), reserved vs ordinary names.

The `finetune` stage's task, model and recipe (params.yaml) with `exact` as the threshold and a budget long enough for
the reserved names' answer; one run seed per process, so that seeds run side by side on separate cores:

    python tuning/finetune/answer_probe.py run SEED [CONDITION ...]  # -> tuning/finetune/answer/log-sSEED[-CONDITION...].csv
    python tuning/finetune/answer_probe.py summary                   # -> answer/summary.md: steps per seed, the ratio, its interval

The stage itself stops each run at the derived names' threshold (its budget is sized for that), so its `exact` column
is censored; this probe is the measurement of the answer that the stage leaves out.
"""
import argparse
from pathlib import Path

import pandas as pd

from probe import run_probe
from unseen.pipeline import load_params

OUT = Path(__file__).parent / "answer"
CONDITIONS = {"unused": {"pool": "unused"}, "adjectives": {"pool": "adjectives"}, "letters": {"pool": "letters"}}
TRAINING = {"steps": 1200, "eval_every": 10, "threshold_metric": "exact", "secondary_thresholds": {}, "eval_screen": False}   # 1,200 steps: 1.7x the one seed's 700


def run(seed: int, names=()):
    "One run of each condition (or of those named) at run seed `seed`, on the stage's held-out problems and pools (base.seed)."
    conditions = {k: v for k, v in CONDITIONS.items() if k in names or not names}
    tag = f"s{seed}" + "".join(f"-{n}" for n in names)
    run_probe(TRAINING, conditions, seed, OUT / f"log-{tag}.csv", OUT / f"runs-{tag}.csv")


def summary():
    "Steps until `exact` >= the stage's threshold per condition and seed, and the ratio to the words with its interval."
    from unseen.finetune_report import steps_summary, steps_to_threshold
    threshold = load_params()["finetune"]["training"]["threshold"]
    log = pd.concat([pd.read_csv(p) for p in sorted(OUT.glob("log-s*.csv"))], ignore_index=True)
    st = steps_to_threshold(log, "exact", threshold, TRAINING["steps"])
    text = (f"Steps until held-out `exact` >= {threshold} (teacher-forced; the run's first evaluation at or above it), per seed:\n\n"
            + st.pivot(index="condition", columns="seed", values="steps").to_markdown() + "\n\n"
            + "Mean steps and the ratio to the words (adjectives and letters pooled), 95% bootstrap interval over the runs:\n\n"
            + steps_summary(st).round(2).to_markdown(index=False) + "\n")
    (OUT / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["run", "summary"]); ap.add_argument("seed", type=int, nargs="?")
    ap.add_argument("conditions", nargs="*", help=f"only these of {', '.join(CONDITIONS)} (default: all)")
    args = ap.parse_args()
    unknown = sorted(set(args.conditions) - set(CONDITIONS))
    if unknown: ap.error(f"unknown condition {unknown[0]!r}: expected {', '.join(CONDITIONS)}")
    run(args.seed, args.conditions) if args.what == "run" else summary()
