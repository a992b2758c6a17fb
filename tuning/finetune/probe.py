"""What the fine-tuning probes share: the `finetune` stage's experiment (params.yaml) with some training settings changed, run at one seed."""
import sys
from pathlib import Path

from unseen.pipeline import load_params


def run_probe(training: dict, conditions: dict, seed: int, log_path: Path, runs_path: Path, **columns):
    """Run `conditions` (name -> condition spec) at run seed `seed` with the stage's task, model, pools and held-out
    problems, `training` overriding the stage's `finetune.training`; write the evaluation log and the runs' table as
    CSV files, with `columns` added to both."""
    from unseen.finetune_experiment import load_experiment, parse_conditions, run_experiment
    params = load_params()
    f = params["finetune"]
    exp = load_experiment(f["model"], {**f["training"], **training}, f["problem"], f["n_names"], f["eval_problems"],
                          params["base"]["seed"], params["base"]["device"], f["cache_dir"])
    print(exp.describe(), file=sys.stderr)
    log, runs = run_experiment(exp.model, exp.tokenizer, exp.task, parse_conditions(conditions), [seed], exp.cfg)
    log_path.parent.mkdir(exist_ok=True); runs_path.parent.mkdir(exist_ok=True)
    log.assign(**columns).to_csv(log_path, index=False)
    runs.drop(columns=["names"]).assign(**columns).to_csv(runs_path, index=False)
