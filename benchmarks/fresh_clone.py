"""A regenerated workspace against the committed outputs: each stage's time, each run's steps and scores.

    python benchmarks/fresh_clone.py WORKSPACE REPRO_LOG [--reference .] [--out DIR]

WORKSPACE is a clone in which `unseen-repro` ran (whole or in part), REPRO_LOG what it printed. For every
stage the log reports done, this writes its time; for every train and evaluate stage done, the run's
steps, cycles and greedy exact match beside the committed run's (`--reference`, the repository
root), and with `--out` a plot of those scores, regenerated against committed (`runs.png`). A log may
span several sittings (`unseen-repro` run again in the same workspace after a stop): a stage it starts
more than once resumed from its checkpoint, so its time here is the last sitting's part only, and it is
left out of the speed per step. A clone regenerates with its own machine's numbers (docs/timing.md), so
the per-seed columns are a second draw of the same recipe, not a check of bytes; the data stage's hashes
are compared byte for byte (`dvc.lock`).
"""
import argparse, csv, json, re
from pathlib import Path

import yaml

from unseen.experiments import run_dir

DONE = re.compile(r"\[(\d\d:\d\d:\d\d)\] done   (\S+) in (\S+)")
START = re.compile(r"\[\d\d:\d\d:\d\d\] start  (\S+)")
SCORES = ("valid_exact_match", "s1_exact_match", "s2_exact_match", "s3_exact_match")
SPLIT_NAMES = dict(zip(SCORES, ("validation", "scenario 1", "scenario 2", "scenario 3")))


def seconds(duration: str) -> float:
    "`1h02m`, `3m05s` or `4.2s` (unseen.repro's format) in seconds."
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(float(v) * units[u] for v, u in re.findall(r"([\d.]+)([hms])", duration))


def stages_done(log: str) -> list:
    "(stage, finished at, seconds) for each stage the log reports done, in order."
    return [(m[2], m[1], seconds(m[3])) for m in DONE.finditer(log)]


def stages_resumed(log: str) -> set:
    "The stages the log starts more than once: stopped with the run and resumed in a later sitting."
    started = START.findall(log)
    return {s for s in started if started.count(s) > 1}


def run_name(stage: str) -> str:
    "`train@freeze-n300-2` -> `freeze-n300-s2`, the run's folder name under runs/train and runs/eval."
    name, seed = stage.split("@")[1].rsplit("-", 1)
    return run_dir(name, int(seed)).name


def read_json(path: Path):
    "The JSON at `path`, or None where the run has none."
    return json.loads(path.read_text()) if path.exists() else None


def data_hashes(root: Path) -> dict:
    "The hashes of the generate stage's datasets in `root`'s dvc.lock (its executed notebook carries timestamps)."
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return {o["path"]: o.get("md5") for o in lock["stages"].get("generate", {}).get("outs", []) if o["path"].startswith("runs/data")}


def variant_table(runs: list) -> str:
    "Markdown: each variant's worst scenario-1 seed and mean scores over its regenerated seeds, beside the same seeds committed."
    by_variant = {}
    for r in runs: by_variant.setdefault(r["run"].rsplit("-s", 1)[0], []).append(r)
    mean = lambda rows, k: sum(r[k] for r in rows) / len(rows)
    lines = ["| variant | seeds | worst seed, scenario 1 | validation | scenario 1 | scenario 2 | scenario 3 |", "|---" * 7 + "|"]
    for variant, rows in by_variant.items():
        cells = [f"{mean(rows, k):.2f} ({mean(rows, 'committed_' + k):.2f})" if rows[0]["committed_" + k] is not None else f"{mean(rows, k):.2f}"
                 for k in SCORES]
        lines.append(f"| {variant} | {len(rows)} | {min(r['s1_exact_match'] for r in rows):.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) if by_variant else ""


def plot_runs(runs: list, path: Path):
    "Each regenerated run's greedy exact match against the committed run's, one panel per split: on the diagonal, the same."
    import matplotlib; matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(SCORES), figsize=(3.2 * len(SCORES), 3.4), sharex=True, sharey=True)
    for ax, key in zip(axes, SCORES):
        pairs = [(r["committed_" + key], r[key]) for r in runs if r["committed_" + key] is not None]
        ax.plot([0, 1], [0, 1], color="0.8", lw=1)
        ax.scatter([c for c, _ in pairs], [n for _, n in pairs], s=14, alpha=0.7)
        ax.set_title(SPLIT_NAMES[key])
        ax.set_xlabel("committed run")
    axes[0].set_ylabel("regenerated run")
    fig.suptitle(f"Greedy exact match of {len(runs)} runs: regenerated in the workspace against the committed outputs", fontsize=10)
    fig.tight_layout(); fig.savefig(path, dpi=120); plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", type=Path); ap.add_argument("log", type=Path)
    ap.add_argument("--reference", type=Path, default=Path("."))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    written = [args.out / n for n in ("variants.md", "stages.csv", "runs.csv", "runs.png")] if args.out else []
    if taken := [str(p) for p in written if p.exists()]:
        ap.error(f"{', '.join(taken)} {'exists' if len(taken) == 1 else 'exist'}: name another --out folder (this script writes only new files)")
    log = args.log.read_text()
    done, resumed = stages_done(log), stages_resumed(log)
    stages, runs = [], []
    for stage, at, secs in done:
        row = {"stage": stage, "finished": at, "seconds": round(secs), "resumed": stage in resumed}
        if stage.startswith("train@"):
            new, old = (read_json(r / "runs/train" / run_name(stage) / "metrics.json") for r in (args.workspace, args.reference))
            row.update(steps=new["step"], cycles=new["cycles"], ms_per_step=round(1000 * secs / new["step"], 1),
                       committed_steps=old["step"] if old else None, committed_cycles=old["cycles"] if old else None)
        if stage.startswith("evaluate@"):
            new, old = (read_json(r / "runs/eval" / run_name(stage) / "metrics.json") for r in (args.workspace, args.reference))
            runs.append({"run": run_name(stage), **{k: new[k] for k in SCORES},
                         **{f"committed_{k}": old[k] if old else None for k in SCORES}})
        stages.append(row)
    if resumed: print(f"resumed after a stop: {', '.join(sorted(resumed))} (their times are the last sitting's part)")
    trained = {run_name(s["stage"]) for s in stages if "steps" in s}
    train = [s for s in stages if "steps" in s and not s["resumed"]]
    core_s = sum(s["seconds"] for s in stages)
    print(f"{len(stages)} stages done, {core_s / 60:.0f} stage-minutes in all")
    if train:
        steps, old = sum(s["steps"] for s in train), sum(s["committed_steps"] or 0 for s in train)
        train_seconds = sum(s["seconds"] for s in train)
        per_step = train_seconds / steps
        print(f"{len(train)} train stages: {train_seconds / 60:.0f} stage-minutes, {steps:,} steps "
              f"({steps / old:.2f}x the committed runs' {old:,}), {1000 * per_step:.1f} ms a step "
              f"({min(s['ms_per_step'] for s in train)}-{max(s['ms_per_step'] for s in train)})")
        left = [json.loads(f.read_text())["step"] for f in sorted((args.reference / "runs/train").glob("*/metrics.json"))
                if f.parent.name not in trained]
        if left:
            print(f"not done: {len(left)} train stages of {sum(left):,} committed steps, about {sum(left) * per_step / 60:.0f} "
                  f"stage-minutes at this run's speed")
    if runs:
        low = [r["run"] for r in runs if r["s1_exact_match"] < 0.97]
        print(f"{len(runs)} evaluated runs; scenario 1 below 0.97: {', '.join(low) or 'none'}")
    if any(s["stage"] == "generate" for s in stages):
        same = data_hashes(args.workspace) == data_hashes(args.reference)
        print("generated data: " + ("byte-identical to the committed dvc.lock" if same else "differs from the committed dvc.lock"))
    table = variant_table(runs)
    if table: print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "variants.md").write_text("Regenerated (committed) greedy exact match, mean over the seeds regenerated.\n\n" + table + "\n")
        for name, rows in (("stages.csv", stages), ("runs.csv", runs)):
            if not rows: continue
            fields = list(dict.fromkeys(k for r in rows for k in r))
            with open(args.out / name, "w", newline="") as f:
                w = csv.DictWriter(f, fields); w.writeheader(); w.writerows(rows)
        if runs: plot_runs(runs, args.out / "runs.png")


if __name__ == "__main__":
    main()
