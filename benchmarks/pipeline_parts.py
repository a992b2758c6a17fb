"""Where a pipeline run's time went: each part's stages, runs and stage time, from `unseen-repro`'s log.

    python benchmarks/pipeline_parts.py REPRO_LOG [--params params.yaml]

REPRO_LOG is what `unseen-repro` printed, over one sitting or several in one workspace. A stage's time is
that of the sitting that finished it (a stage stopped with its sitting and started again counts once, its
last attempt); the wall time of each sitting runs from its first start to its last line with a time.
The parts follow params.yaml: the results table's rows (`results.experiments`), the runs they are compared
with (`results.parts`, `results.controls`), the diversity sweep (`results.sweep`) and the rest of
`train.experiments`, then evaluation, fine-tuning and the small stages. Training and evaluation stages run
two at a time beside each other, so a part's stage time is core-minutes, not wall time.
"""
import argparse, re
from collections import defaultdict

import yaml

from fresh_clone import seconds   # unseen-repro's durations, read as fresh_clone.py reads them

LINE = re.compile(r"\[(\d\d):(\d\d):(\d\d)\] (start|done)\s+(\S+)(?: in (\S+))?")
HEADER = re.compile(r"^\d+ of \d+ stages to run")


def read_log(text: str):
    "(stage -> seconds of its last completed attempt, [wall seconds of each sitting])."
    done, sittings, first, last = {}, [], None, None
    for line in text.splitlines():
        if HEADER.match(line) or "go: " in line:
            if first is not None and last is not None: sittings.append(last - first)
            first = last = None
            continue
        m = LINE.search(line)
        if not m: continue
        t = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
        if first is None: first = t
        if last is not None and t < last: t += 86400   # past midnight
        last = t
        if m[4] == "done": done[m[5]] = seconds(m[6])
    if first is not None and last is not None: sittings.append(last - first)
    return done, [s for s in sittings if s > 0]


def part_of(run: str, params: dict) -> str:
    "The part of the pipeline a training run belongs to."
    res = params["results"]
    if run in res["experiments"]: return "results table (claims 1, 3, 4, 6)"
    if any(run in v for v in res.get("parts", {}).values()): return "the full recipe's parts (claim 6)"
    if run == "freeze-long": return "training-length control (claim 5)"
    if any(run in v for v in res.get("controls", {}).values()): return "reset controls (claim 4)"
    if any(run in v for v in res.get("sweep", {}).values()): return "diversity sweep (claim 5)"
    return "ablations (claim 2)"


def parts(done: dict, params: dict) -> dict:
    "part -> [stages, core-seconds]."
    out = defaultdict(lambda: [0, 0.0])
    for stage, s in done.items():
        kind, _, item = stage.partition("@")
        if kind in ("train", "train-more"): part = part_of(item.rsplit("-", 1)[0], params)
        elif kind in ("evaluate", "evaluate-more"): part = "evaluation"
        elif kind == "finetune": part = "fine-tuning (claim 8)"
        else: part = "generate, lemma, gemma, results, figures"
        out[part][0] += 1; out[part][1] += s
    return dict(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log"); ap.add_argument("--params", default="params.yaml")
    a = ap.parse_args()
    params = yaml.safe_load(open(a.params))
    done, sittings = read_log(open(a.log).read())
    print("| part | stages | stage time |\n|---|---|---|")
    total = 0.0
    for part, (n, s) in sorted(parts(done, params).items(), key=lambda kv: -kv[1][1]):
        print(f"| {part} | {n} | {s / 60:,.0f} core-minutes |"); total += s
    print(f"| all | {len(done)} | {total / 60:,.0f} core-minutes ({total / 3600:.1f} h) |")
    print(f"\nsittings (wall): {', '.join(f'{s / 60:.0f} min' for s in sittings)}; "
          f"{sum(sittings) / 60:.0f} min in all")


if __name__ == "__main__": main()
