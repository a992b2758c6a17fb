# Where a pipeline training run's time goes, beyond the step: cProfile over one whole run (standard, seed 0).
# Run from a clone's root after its generate stage (run.sh); writes only under a new temporary folder.
import cProfile, pstats, tempfile, time, torch
torch.set_num_threads(1)
from unseen.pipeline import load_params, stage_parameters, notebook_parameters
from unseen.experiments import resolve_experiment, train_experiment
defaults = notebook_parameters("nbs/stages/train.ipynb")
p = {**defaults, **stage_parameters("train", load_params("params.yaml"), defaults, {"run": "standard", "seed": 0})}
exp = resolve_experiment(p["run"], p["experiments"], p["n_train"], p["model"], p["intervention"], p["training"], p["device"], p["dtype"])
out = tempfile.mkdtemp()
t = time.time()
cProfile.run('train_experiment(exp, 0, p["data_dir"], out, weights=f"{out}/w.safetensors")', f"{out}/prof.out")
print("wall", time.time() - t)
s = pstats.Stats(f"{out}/prof.out"); s.sort_stats("cumulative").print_stats(45)
