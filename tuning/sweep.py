"""One tuning run outside the pipeline: generate (or reuse) a dataset, train, score the validation split.

    python tuning/sweep.py NAME '{"n_train": 1000, "variant": "freeze", "cot_format": "derived",
                                  "training": {"schedule": "trigger", "steps": 8000}}' [--out /tmp/unseen-tuning] [--report-test]

Keys: n_train, seed (of training; the data always use seed 0, as the pipeline does), cot_format, problem (LogicConfig
overrides), train_problems, variant, model (ModelConfig overrides), interventions, training (TrainConfig overrides).
Recipe choices are made on the validation split (seen names, training distribution, a seed of its own): the run prints
its greedy exact match and answer accuracy, `[exact match, answer]`, with the steps trained. `--report-test` also decodes
the three scenario test sets, for reporting a chosen recipe, never for choosing one.
"""
import argparse, json, os, shutil, time
from pathlib import Path

import torch

from unseen.datasets import DataConfig, generate_datasets, load_sequences
from unseen.evaluate import evaluate, evaluate_scenarios
from unseen.experiments import resolve_experiment
from unseen.train import load_model, train

# the base every spec of runs.jsonl was run against, so a spec names only what it changes and a recorded spec
# reruns as it ran: params.yaml's model with heads of d_model / n_head (params.yaml sets head_dim 32: a spec says
# `"model": {"head_dim": 32}`) and queries and keys drawn as every other weight (a spec says `"qk_std": 0.125`), and a
# cosine schedule over 3,500 steps (a spec says `"schedule": "trigger"`, ...) and one cycle (a spec says `"cycles": 3`)
PIPELINE_MODEL = {"n_layer": 2, "d_model": 64, "n_head": 4, "head_dim": None, "d_mlp": 256, "positions": "rotary", "qk_std": None}
PIPELINE_TRAINING = {"steps": 3500, "lr": 3e-3, "schedule": "cosine", "min_lr_ratio": 0.1, "decay_steps": 1000, "cycles": 1,
                     "dtype": "bfloat16", "log_every": 100, "checkpoint_every": 0}
# resets: none in a run's last cycle, as the specs recorded before `reset_quiet` ran (a spec sets it: `"interventions": {"reset_quiet": 1500}`)
PIPELINE_INTERVENTION = {"reset_quiet": None}


def dataset(out: Path, spec: dict) -> Path:
    "The datasets of `spec` (seed 0, as in the pipeline), generated once and shared by runs of the same data settings."
    n_train, cot_format = spec.get("n_train", 1000), spec.get("cot_format", "rules")
    data = out / "data" / f"n{n_train}-{cot_format}"
    if not (data / "stats.json").exists():
        # into a directory of this process, then renamed: two runs started together both generate, one keeps its copy
        own = data.with_name(f"{data.name}.{os.getpid()}")
        generate_datasets(DataConfig(n_train=n_train, cot_format=cot_format, problem=spec.get("problem", {}),
                                     train_problems=spec.get("train_problems", 200000)), 0, own, progress=False)
        try: own.rename(data)
        except OSError: shutil.rmtree(own)      # the other run was first: same seed, same data
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name"); ap.add_argument("spec", type=json.loads); ap.add_argument("--out", default="/tmp/unseen-tuning")
    ap.add_argument("--report-test", action="store_true", help="also decode the scenario test sets (reporting only)")
    args = ap.parse_args()
    spec, out = args.spec, Path(args.out)
    torch.set_num_threads(1)
    data = dataset(out, spec)
    # the spec's experiment keys over the tuning base, resolved as the train stage resolves an experiment
    entry = {"variant": spec.get("variant", "standard"), **{k: spec[k] for k in ("model", "training") if k in spec},
             "intervention": spec.get("interventions", {})}
    exp = resolve_experiment(args.name, {args.name: entry}, n_train=spec.get("n_train", 1000), model=PIPELINE_MODEL,
                             intervention=PIPELINE_INTERVENTION, training=PIPELINE_TRAINING)
    start = time.time()
    metrics = train(data, out / args.name, exp.model, exp.intervention, exp.training, spec.get("seed", 0), exp.variant, progress=False)
    model = load_model(out / args.name / "model.safetensors")
    valid = evaluate(model, load_sequences(data / "valid.safetensors"))
    result = {"name": args.name, "minutes": round((time.time() - start) / 60, 1), "steps": metrics["step"],
              "trigger_step": metrics.get("trigger_step"), "valid": [valid["exact_match"], valid["answer"]]}
    if args.report_test:
        result.update({s: [r["exact_match"], r["answer"]] for s, r in evaluate_scenarios(model, data).items()})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
