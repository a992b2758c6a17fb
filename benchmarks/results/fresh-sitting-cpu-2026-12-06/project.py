# What one sitting of the pipeline says about the whole: its finished stages by part, and the whole pipeline's wall
# time projected from the rates the sitting measured (a projection, not a timing).
#     python project.py CLONE         (after run.sh; reads repro.log beside this file and CLONE's fine-tuning run store)
# While `finetune` runs (it starts first), its two worker processes share one core and the other stages run in the
# second slot, one at a time, at the sitting's measured times (each training stage fitted as a + b * steps over the
# sitting's finished ones, each run's steps as committed; each evaluation the sitting's mean). Fine-tuning advances
# at the sitting's rate: the committed own time of the runs it finished per second of wall time (runs under way not
# counted, so a lower bound). Whichever ends first frees its share: the training left then runs two stages at a
# time at the same stage times (an assumption: two runs side by side slow each other by about 12%, the quiet
# sample measured, about what one run beside fine-tuning pays), or the fine-tuning left at twice its rate.
import json, sys
from pathlib import Path
import numpy as np, pandas as pd

here = Path(__file__).resolve().parent
repo, clone = here.parents[2], Path(sys.argv[1])
sys.path.insert(0, str(repo / "benchmarks"))
from pipeline_parts import read_log

done, sittings = read_log((here / "repro.log").read_text())
wall = sittings[0]
steps = {p.parent.name: json.loads(p.read_text())["step"] for p in (repo / "runs/train").glob("*/metrics.json")}
train = {s.split("@")[1]: t for s, t in done.items() if s.startswith("train")}
evals = [t for s, t in done.items() if s.startswith("evaluate")]
x = np.array([steps["-s".join(r.rsplit("-", 1))] for r in train])                    # copy-0 -> copy-s0
y = np.array(list(train.values()))
b, a = np.polyfit(x, y, 1)
print(f"sitting: {wall / 60:.0f} min of wall time; {len(done)} stages finished: {len(train)} training, {len(evals)} evaluation, "
      f"{len(done) - len(train) - len(evals)} other")
print(f"training stages in the sitting: {y.sum() / 60:.0f} min for {x.sum():,} steps; fit {a:.0f} s + {1000 * b:.1f} ms a step "
      f"(residuals {np.abs(y - (a + b * x)).max():.0f} s at most)")
t_train = sum(a + b * s for s in steps.values())
t_eval = np.mean(evals) * len(steps)
small = sum(t for s, t in done.items() if not s.startswith(("train", "evaluate")))
runs = pd.read_csv(repo / "runs/finetune/runs.csv")
store = clone / "runs/checkpoints/finetune-runs"
finished = [p.name for p in store.iterdir() if (p / "run.json").exists()] if store.is_dir() else []
own = {f"{r.condition}-s{r.seed}": r.seconds for r in runs.itertuples()}
ft_done = sum(own[n] for n in finished)
slot = t_train + t_eval + small                 # the training side, one stage at a time
rate1 = ft_done / wall
ft_total = sum(own.values())
print(f"training {t_train / 60:.0f} min + evaluation {t_eval / 60:.0f} min (91 runs each) + small stages {small / 60:.0f} min"
      f" = {slot / 60:.0f} min one stage at a time")
print(f"fine-tuning: {len(finished)} of {len(own)} runs finished in the sitting, {ft_done / 60:.0f} of {ft_total / 60:.0f} "
      f"minutes of the committed runs' own time: {rate1:.2f} of them a second of wall time, beside one training slot")
ft_end = ft_total / rate1
if ft_end <= slot:
    total = ft_end + (slot - ft_end) / 2
    print(f"fine-tuning ends at {ft_end / 3600:.1f} h with {(slot - ft_end) / 60:.0f} min of the training side left, "
          f"two stages at a time: {(slot - ft_end) / 2 / 60:.0f} min")
else:
    total = slot + (ft_total - rate1 * slot) / (2 * rate1)
    print(f"the training side ends at {slot / 3600:.1f} h with {(ft_total - rate1 * slot) / 60:.0f} min of fine-tuning left")
print(f"projected wall time of the whole pipeline: {total / 3600:.1f} h")
