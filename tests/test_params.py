"""params.yaml is the one set of defaults: the profiles (params-paper.yaml, params-smoke.yaml) have its keys, the library its values."""
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]


def _keys(d: dict, prefix="") -> set:
    out = set()
    for k, v in d.items():
        out.add(prefix + str(k))
        if isinstance(v, dict): out |= _keys(v, f"{prefix}{k}.")
    return out


def test_paper_params_have_the_keys_of_the_defaults():
    cpu, paper = (yaml.safe_load((ROOT / f).read_text()) for f in ("params.yaml", "params-paper.yaml"))
    assert _keys(cpu) == _keys(paper), sorted(_keys(cpu) ^ _keys(paper))


def test_smoke_params_have_the_keys_of_the_defaults():
    cpu, smoke = (yaml.safe_load((ROOT / f).read_text()) for f in ("params.yaml", "params-smoke.yaml"))
    assert _keys(cpu) == _keys(smoke), sorted(_keys(cpu) ^ _keys(smoke))


def test_quick_params_have_the_keys_of_the_defaults_and_name_their_own_runs():
    "params-quick.yaml: params.yaml's keys and recipe, fewer experiments and fine-tuning conditions, each role one of its runs."
    cpu, quick = (yaml.safe_load((ROOT / f).read_text()) for f in ("params.yaml", "params-quick.yaml"))
    listed = ("train.experiments.", "finetune.conditions.", "results.controls.", "results.parts.", "results.sweep.", "results.length.", "figures.forgetting.",
              "finetune.training.secondary_thresholds.")   # the quick look stops at the derived names: no answer endpoint
    strip = lambda keys: {k for k in keys if not k.startswith(listed)}
    assert strip(_keys(cpu)) == strip(_keys(quick)), sorted(strip(_keys(cpu)) ^ strip(_keys(quick)))
    assert quick["train"]["training"] == cpu["train"]["training"] and quick["train"]["model"] == cpu["train"]["model"]
    runs = set(quick["train"]["experiments"])
    assert runs <= set(cpu["train"]["experiments"]) and set(quick["results"]["experiments"]) <= runs
    figures = quick["figures"]
    named = [*figures["variants"], *figures["forgetting"], *figures["forgetting"].values(), figures["baseline"], figures["untied"], figures["no_decay"]]
    assert {n for n in named if n} <= runs and quick["base"]["mark"] == "quick look, 1 seed" and quick["matrix"]["seeds"] == [0]


def test_smoke_params_are_toy_scale():
    smoke = yaml.safe_load((ROOT / "params-smoke.yaml").read_text())
    runs = len(smoke["train"]["experiments"]) * len(smoke["matrix"]["seeds"])
    steps = [{**smoke["train"]["training"], **spec.get("training", {})}["steps"] for spec in smoke["train"]["experiments"].values()]
    assert runs * max(steps) <= 1000, (runs, max(steps))            # training steps in all, every run at a batch of
    assert smoke["train"]["training"]["batch_size"] <= 16 and smoke["finetune"]["model"]["source"] == "tiny"


def test_paper_params_are_paper_scale():
    from unseen.model import ModelConfig, Transformer
    from unseen.tokens import Vocab
    import torch
    paper = yaml.safe_load((ROOT / "params-paper.yaml").read_text())
    vocab = len(Vocab(paper["base"]["n_train"], paper["generate"]["n_unseen"]))
    with torch.device("meta"):   # count parameters without allocating them
        n = Transformer(ModelConfig(vocab_size=vocab, **paper["train"]["model"])).n_params()
    assert 60e6 <= n <= 75e6, n
    assert paper["train"]["training"]["batch_size"] == 256 and paper["train"]["training"]["optimizer"] == "adamw"
    assert paper["generate"]["n_unseen"] == 100 and paper["base"]["device"] == "cuda"


def _listed(v):
    "YAML lists as the dataclasses hold them (tuples)."
    return tuple(v) if isinstance(v, list) else v


def test_library_defaults_are_the_cpu_pipelines():
    "Calling the library without settings gives params.yaml's recipe: one set of defaults, not two."
    import dataclasses
    from unseen.datasets import DataConfig
    from unseen.interventions import VARIANTS, variant_settings
    from unseen.model import ModelConfig
    from unseen.train import TrainConfig
    from unseen.finetune_run import FinetuneConfig
    cpu = yaml.safe_load((ROOT / "params.yaml").read_text())
    base, train, generate = cpu["base"], cpu["train"], cpu["generate"]
    sections = {"train.model": (ModelConfig(), train["model"]),
                "train.training": (TrainConfig(), {**train["training"], "device": base["device"], "dtype": base["dtype"]}),
                "train.intervention": (variant_settings("reset")[1], train["intervention"]),
                "generate": (DataConfig(), {**{k: v for k, v in generate.items() if k != "problem"}, "n_train": base["n_train"]}),
                "generate.problem": (DataConfig().problem, generate["problem"]),
                "finetune.training": (FinetuneConfig(), {**cpu["finetune"]["training"], "device": base["device"]})}
    for name, (config, values) in sections.items():
        defaults = dataclasses.asdict(config)
        differ = {k: (defaults[k], v) for k, v in values.items() if defaults[k] != _listed(v)}
        assert not differ, f"{name}: library default vs params.yaml: {differ}"
    assert all(i.get("reset_every") in (None, train["intervention"]["reset_every"]) for _, i in VARIANTS.values())
    assert ModelConfig().vocab_size == len(DataConfig().vocab)   # a literal in model.py, which does not import the tokens


def test_finetune_endpoints_are_ones_a_coin_cannot_pass_in_every_profile():
    "Each profile's fine-tuning config validates; its answer endpoints a run answering at chance crosses with P < 1% over all evaluations."
    from unseen.finetune_experiment import parse_conditions
    from unseen.finetune_run import FinetuneConfig
    from unseen.finetune_survival import ANSWER_METRICS, PRIMARY, chance_crossing, secondary_threshold
    for name in ("params.yaml", "params-quick.yaml", "params-paper.yaml"):
        p = yaml.safe_load((ROOT / name).read_text())["finetune"]
        cfg = FinetuneConfig(**p["training"])
        parse_conditions(p["conditions"])
        n, n_evals = p["eval_problems"], len(cfg.eval_steps())
        assert (cfg.threshold_metric, cfg.threshold) == (PRIMARY["metric"], PRIMARY["threshold"]) and n >= PRIMARY["min_problems"], name
        answer = {m: t for m, t in cfg.endpoints().items() if m in ANSWER_METRICS}
        # the quick look measures the primary endpoint alone (docs/timing.md); the others keep the answer as their secondary
        assert answer or name == "params-quick.yaml", f"{name}: no endpoint with the answer"
        for m, t in answer.items():
            assert chance_crossing(n, t, n_evals) < 0.01 and t >= secondary_threshold(n, n_evals), (name, m, t)
    cpu = yaml.safe_load((ROOT / "params.yaml").read_text())["finetune"]
    seeds = {c: d.get("n_seeds", cpu["n_seeds"]) for c, d in cpu["conditions"].items()}
    assert seeds == {"unused": 10, "adjectives": 10, "letters": 10, "unused_mean_noise": 5, "unused_covariance": 5}, seeds
