"""The validation-split tuning runs of tuning/runs.jsonl as a markdown table: one row per recipe and variant, over seeds.

    python tuning/summarise.py [tuning/runs.jsonl]

Only runs with `"split": "valid"` enter it: their recipe was chosen on the validation split (seen names, the training
distribution); a seed below 0.97 has not learned the task well enough to read scenarios 2 and 3 from (the bar is
greedy exact match >= 0.97 in every seed). The scenario columns are the chosen recipes' test scores, printed for reporting; no choice read them.
"""
import json, sys
from collections import defaultdict
from pathlib import Path
from statistics import mean


def main(path=Path(__file__).with_name("runs.jsonl")):
    groups = defaultdict(list)
    for line in Path(path).read_text().splitlines():
        run = json.loads(line)
        if run.get("split") == "valid": groups[(run["recipe"], run["variant"])].append(run)
    print("| recipe | variant | seeds | validation exact match, mean (worst) | seeds below 0.97 | steps, mean | S1 | S2 | S3 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (recipe, variant), runs in groups.items():
        valid = [r["valid"][0] for r in runs]
        test = {s: mean(r["test"][s][0] for r in runs) for s in ("s1", "s2", "s3")} if all("test" in r for r in runs) else {}
        print(f"| {recipe} | {variant} | {len(runs)} | {mean(valid):.2f} ({min(valid):.2f}) | {sum(v < 0.97 for v in valid)} | "
              f"{mean(r['steps'] for r in runs):,.0f} | "
              + " | ".join(f"{test[s]:.2f}" if test else "" for s in ("s1", "s2", "s3")) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
