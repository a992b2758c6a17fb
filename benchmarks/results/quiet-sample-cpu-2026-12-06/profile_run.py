# Where a pipeline training run's time goes, beyond the step: cProfile over one whole run (standard, seed 0).
import cProfile, pstats, time, torch
torch.set_num_threads(1)
from unseen.pipeline import load_params, stage_parameters, notebook_parameters
from unseen.experiments import resolve_experiment, train_experiment
defaults = notebook_parameters("nbs/stages/train.ipynb")
p = {**defaults, **stage_parameters("train", load_params("params.yaml"), defaults, {"run": "standard", "seed": 0})}
exp = resolve_experiment(p["run"], p["experiments"], p["n_train"], p["model"], p["intervention"], p["training"], p["device"], p["dtype"])
t = time.time()
cProfile.run('train_experiment(exp, 0, p["data_dir"], "/tmp/prof_out", weights="/tmp/prof_out/w.safetensors")', "/tmp/prof.out")
print("wall", time.time() - t)
s = pstats.Stats("/tmp/prof.out"); s.sort_stats("cumulative").print_stats(45)
