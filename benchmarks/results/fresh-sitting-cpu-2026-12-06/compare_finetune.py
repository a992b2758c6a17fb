# The fine-tuning runs a sitting finished (the stage's run store in CLONE) against the committed runs/finetune/log.csv:
# every column but `seconds` (wall time): steps and counts exactly, the scores to within what the committed CSV keeps
# (pandas wrote it with at most 16 significant digits, so its last bit can differ from the run's: <= 1e-15 is the same).
#     python compare_finetune.py CLONE > finetune-runs.txt
import sys
from pathlib import Path
import numpy as np
import pandas as pd

clone, repo = Path(sys.argv[1]), Path(__file__).resolve().parents[3]
committed = pd.read_csv(repo / "runs/finetune/log.csv", float_precision="round_trip")
store = clone / "runs/checkpoints/finetune-runs"
runs = sorted(p for p in store.iterdir() if (p / "run.json").exists()) if store.is_dir() else []
print(f"{len(runs)} finished runs in {store.relative_to(clone)}")
for run in runs:
    log = pd.read_csv(run / "log.csv", float_precision="round_trip")
    cond, seed = run.name.rsplit("-s", 1)
    ref = committed[(committed.condition == cond) & (committed.seed == int(seed))].drop(columns=["condition", "seed"])
    cols = [c for c in log.columns if c not in ("seconds", "condition", "seed")]
    ref = ref.reset_index(drop=True)
    if len(log) != len(ref): print(f"{run.name}: {len(log)} evaluations, committed {len(ref)}: DIFFERS"); continue
    exact = ["step", "scored"]
    gap = max(float(np.nanmax(np.abs(log[c].to_numpy(float) - ref[c].to_numpy(float)))) for c in cols if c not in exact)
    same = log[exact].equals(ref[exact]) and gap <= 1e-15
    print(f"{run.name}: {len(log)} evaluations, last step {int(log.step.iloc[-1])}, own time {log.seconds.iloc[-1]:.0f} s, "
          f"largest score difference {gap:.1e}: {'the same as committed' if same else 'DIFFERS from committed'}")
