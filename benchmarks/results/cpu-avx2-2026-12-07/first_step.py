"""One experiment's compiled training step as its stage builds it (params.yaml), under whichever `unseen` is first on
PYTHONPATH: the first step's seconds, Dynamo's restarts, and hashes of the losses over `steps` steps and the final weights.

    PYTHONPATH=CODE python first_step.py EXPERIMENT DTYPE STEPS TRAIN_SAFETENSORS

Run under two checkouts (a `git worktree` of each commit) to compare their bytes; the model's vocabulary is the
task's 1,110 names, its positions 48, the batches the dataset's first of seed 0.
"""
import dataclasses, hashlib, json, sys, time

import torch

from unseen.datasets import load_sequences
from unseen.experiments import resolve_experiment
from unseen.pipeline import load_params
from unseen.train import batch_at, build_run, step_function
from torch._dynamo.utils import get_compilation_metrics

name, dtype, steps, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = load_params("params.yaml"); t = p["train"]
exp = resolve_experiment(name, t["experiments"], p["base"]["n_train"], t["model"], t["intervention"],
                         {**t["training"], "threads": 1}, "cpu", dtype)
net, opt = build_run(dataclasses.replace(exp.model, vocab_size=1110, max_len=48), exp.intervention, exp.training, 0)
step = step_function(net, opt, exp.training)
seqs = load_sequences(data)
batches = [batch_at(seqs, 0, i, 64) for i in range(1, steps + 1)]
start = time.perf_counter(); losses = [step(*batches[0], 1e-3).item()]; first = time.perf_counter() - start
losses += [step(x, y, 1e-3).item() for x, y in batches[1:]]
weights = hashlib.md5()
for v in net.state_dict().values(): weights.update(v.detach().float().numpy().tobytes())
print(json.dumps({"experiment": name, "dtype": dtype, "code": __import__("unseen").__file__.rsplit("/unseen/", 1)[0],
                  "first_step_s": round(first, 2), "restarts": sum(bool(m.restart_reasons) for m in get_compilation_metrics()),
                  "losses_md5": hashlib.md5(str(losses).encode()).hexdigest()[:12], "weights_md5": weights.hexdigest()[:12]}))
