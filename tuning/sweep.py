"""One tuning run outside the pipeline: generate (or reuse) a dataset, train, decode the three scenarios.

    python tuning/sweep.py NAME '{"n_train": 1000, "variant": "freeze", "model": {"d_model": 64, "d_mlp": 256},
                                  "training": {"steps": 2500, "answer_weight": 5.0}}' [--out /tmp/unseen-tuning]

Keys: n_train, seed (of training; the data always use seed 0, as the pipeline does), problem (LogicConfig overrides),
train_problems, variant, model (ModelConfig overrides: note that
its defaults are d_model 128, d_mlp 512, not the pipeline's), interventions, training (TrainConfig overrides).
Prints one JSON line: minutes, and per scenario [exact match, answer accuracy] of greedy decoding.
"""
import argparse, json, os, shutil, time
from pathlib import Path

import torch

from unseen.datasets import DataConfig, generate_datasets
from unseen.evaluate import evaluate_scenarios
from unseen.train import TrainConfig, load_model, train


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name"); ap.add_argument("spec", type=json.loads); ap.add_argument("--out", default="/tmp/unseen-tuning")
    args = ap.parse_args()
    spec, out = args.spec, Path(args.out)
    torch.set_num_threads(1)
    n_train = spec.get("n_train", 100)
    data = out / "data" / f"n{n_train}"   # shared by runs of the same vocabulary (same seed, same problem settings)
    if not (data / "stats.json").exists():
        # into a directory of this process, then renamed: two runs started together both generate, one keeps its copy
        own = data.with_name(f"{data.name}.{os.getpid()}")
        generate_datasets(DataConfig(n_train=n_train, problem=spec.get("problem", {}), train_problems=spec.get("train_problems", 200000)),
                          0, own, progress=False)
        try: own.rename(data)
        except OSError: shutil.rmtree(own)      # the other run was first: same seed, same data
    variant = spec.get("variant", "standard")
    cfg = TrainConfig(**{"log_every": 250, "checkpoint_every": 0, **spec.get("training", {})})
    start = time.time()
    train(data, out / args.name, intervention=variant, seed=spec.get("seed", 0), model=spec.get("model", {}), interventions=spec.get("interventions", {}),
          cfg=cfg, progress=False)
    result = evaluate_scenarios(load_model(out / args.name / "model.safetensors"), data)
    print(json.dumps({"name": args.name, "minutes": round((time.time() - start) / 60, 1),
                      **{s: [result[s]["exact_match"], result[s]["answer"]] for s in result}}))


if __name__ == "__main__":
    main()
