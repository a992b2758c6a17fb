"""How well each trained run of the pipeline fits its own training problems, against new problems of the same distribution.

    python tuning/fit_gap.py [--below 0.98]     # in a clone: reads runs/train and runs/eval, which are in git

The evaluate stage decodes (greedily) each run's validation split and the first `evaluate.fit_problems` problems of
its training set (`valid_exact_match`, `fit_exact_match`). One line per run, lowest validation first, then the mean
gap of the runs below and at or above `--below` on validation.
"""
import argparse, json
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--below", type=float, default=0.98)
    args = ap.parse_args()
    rows = []
    for path in sorted(Path("runs/eval").glob("*/metrics.json")):
        scores, trained = json.loads(path.read_text()), json.loads((Path("runs/train") / path.parent.name / "metrics.json").read_text())
        if "fit_exact_match" not in scores: raise SystemExit(f"{path} has no fit_exact_match: rerun its evaluate stage (dvc repro)")
        rows.append((scores["valid_exact_match"], scores["fit_exact_match"], path.parent.name, trained["step"], trained.get("cycles")))
    print("| run | steps | cycles | training problems | validation | gap |\n|---|---|---|---|---|---|")
    for valid, fit, name, steps, cycles in sorted(rows):
        print(f"| {name} | {steps:,} | {cycles} | {fit:.3f} | {valid:.3f} | {fit - valid:+.3f} |")
    for label, part in (("below", [r for r in rows if r[0] < args.below]), ("at or above", [r for r in rows if r[0] >= args.below])):
        if part: print(f"\n{len(part)} runs {label} {args.below} on validation: mean gap {sum(f - v for v, f, *_ in part) / len(part):+.3f}, "
                       f"range {min(f - v for v, f, *_ in part):+.3f} to {max(f - v for v, f, *_ in part):+.3f}")


if __name__ == "__main__":
    main()
