"""A short run of the real stage notebooks at paper scale (on a GPU), without Jupyter or DVC; and two timings
the paper-scale estimate needs (docs/paper-scale.md): several training runs sharing one GPU, and fine-tuning.

    python benchmarks/paper_smoke.py [--params params-paper.yaml] [--steps 2000] [--runs standard freeze] [--out runs/smoke]
    python benchmarks/paper_smoke.py --share 1 2 4 [--share-steps 100]     # K runs of the paper model on one GPU at once
    python benchmarks/paper_smoke.py --finetune 270m 1b [--finetune-steps 30]   # fine-tuning steps of Gemma 3 shapes (random weights)
    python benchmarks/paper_smoke.py --params params.yaml --device cuda --finetune 270m   # the CPU stage's recipe, on a GPU

Smoke: the library calls of the generate, train and evaluate stages, in this process (GPU machines often
have PyTorch but no Jupyter): the datasets of `generate` (`DataConfig.from_dict`), each experiment resolved
as the train stage resolves it (`unseen.experiments`), then greedy decoding of the three scenarios. The
parameters file is used as it is except: only the main training vocabulary, enough training problems for
`--steps`, and `--steps` training steps in one cycle of the schedule (warm-up and decay scaled with them). Prints each stage's wall
time, training steps/s and tokens/s, peak GPU memory, each run's greedy exact match per scenario, and the
time the whole `train` matrix of the parameters file would take at this speed. Outputs go to `--out`,
checkpoints to runs/checkpoints/smoke-*.

Share: K processes at once train the model of `--params` (train.model, vocabulary of base.n_train) on random
batches as long as the task's padded batches (sampled from generate.problem), with the training step of the
pipeline (`unseen.train.target_loss`, AdamW, bf16 autocast); prints each K's step time and the runs' combined
steps per second against one run alone: what `--resources train:GPU=1/K` of docs/cluster.md buys.

Finetune: a randomly initialised Gemma 3 of the shape of `tiny`, `270m` or `1b` (the real models' sizes and
vocabulary of 262,144 rows, with the lessons' tiny tokenizer: the time per step does not depend on the weights,
and no checkpoint is needed) fine-tuned with the recipe of the parameters file's finetune section (params-paper.yaml:
every weight, float32; params.yaml: the body and the task rows, bf16); prints seconds per step and peak memory.
`--device` replaces the file's base.device (to time the CPU recipe on a GPU).
"""
import argparse, json, os, subprocess, sys, time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
import torch

from unseen.datasets import DataConfig, generate_datasets, load_sequences
from unseen.evaluate import evaluate_scenarios
from unseen.experiments import resolve_experiment, train_experiment
from unseen.pipeline import load_params
from unseen.train import load_model


def generate(params: dict, data_dir: Path, train_problems: int) -> float:
    "The datasets of the main vocabulary, as the generate stage makes them, with `train_problems` training problems; seconds."
    base, section = params["base"], params["generate"]
    cfg = DataConfig.from_dict({**section, "n_train": base["n_train"], "train_problems": train_problems})
    t = time.perf_counter()
    generate_datasets(cfg, base["seed"], data_dir / f"n{base['n_train']}", progress=False)
    return time.perf_counter() - t


def timed(f, *args, **kwargs):
    "f's result and its wall time, the device's queued work included."
    t = time.perf_counter()
    result = f(*args, **kwargs)
    if torch.cuda.is_available(): torch.cuda.synchronize()
    return result, time.perf_counter() - t


def padded_length(params: dict, batch: int, samples: int = 20) -> int:
    "Mean length a training batch of `batch` problems pads to, for the task of `params` (sampled, seed 0)."
    import numpy as np
    from unseen.datasets import DataConfig, training_set
    gen = params["generate"]
    cfg = DataConfig(n_train=params["base"]["n_train"], n_unseen=gen["n_unseen"], cot_format=gen["cot_format"],
                     train_problems=batch * samples, test_problems=1, problem=gen["problem"])
    lengths = training_set(cfg, seed=0, progress=False).lengths
    return int(round(np.mean([lengths[i * batch:(i + 1) * batch].max() for i in range(samples)])))


def one_run(params_file: str, steps: int, seq: int, out: str):
    "One process of `--share`: time `steps` training steps of the paper model; write the result to `out` (JSON)."
    from unseen.model import ModelConfig, Transformer
    from unseen.tokens import Vocab
    from unseen.train import TrainConfig, target_loss
    params = load_params(params_file)
    device, cfg = params["base"]["device"], TrainConfig(**params["train"]["training"])
    vocab = len(Vocab(params["base"]["n_train"], params["generate"]["n_unseen"]))
    model = Transformer(ModelConfig(vocab_size=vocab, max_len=seq + 8, **params["train"]["model"])).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)
    autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=params["base"]["dtype"] == "bfloat16")
    batch = cfg.batch_size
    x, y = torch.randint(0, vocab, (batch, seq), device=device), torch.randint(0, vocab, (batch, seq), device=device)
    y[:, :seq // 2] = -100  # the prompt is context; the chain of thought and answer are targets
    def step():
        with autocast: loss, _ = target_loss(model, x, y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    for _ in range(5): step()  # warm up
    if device.startswith("cuda"): torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps): step()
    if device.startswith("cuda"): torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    mem = torch.cuda.max_memory_allocated() / 2 ** 30 if device.startswith("cuda") else float("nan")
    Path(out).write_text(json.dumps({"step_ms": 1000 * seconds / steps, "seconds": seconds, "peak_GiB": mem}))


def share(params_file: str, ks: list, steps: int, out: Path):
    "`--share`: for each K, K processes training at once; their step times and combined steps/s against one alone."
    from unseen.train import TrainConfig
    params = load_params(params_file)
    batch = TrainConfig(**params["train"]["training"]).batch_size
    seq = padded_length(params, batch)
    print(f"share: the model of {params_file}, batch {batch} x {seq} tokens "
          f"(the task's padded batch), {steps} timed steps a run", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    rows, alone = [], None
    for k in ks:
        files = [out / f"share-{k}-{i}.json" for i in range(k)]
        procs = [subprocess.Popen([sys.executable, __file__, "--params", params_file, "--one-run", str(f),
                                   "--share-steps", str(steps), "--seq", str(seq)]) for f in files]
        codes = [p.wait() for p in procs]
        if any(codes): print(f"K={k}: a run failed (exit codes {codes})", flush=True); continue
        runs = [json.loads(f.read_text()) for f in files]
        rate = sum(1000 / r["step_ms"] for r in runs)  # steps per second, all K runs together
        alone = alone or (rate if k == 1 else None)
        rows.append({"runs": k, "step_ms": [round(r["step_ms"], 1) for r in runs], "steps_per_s": rate,
                     "peak_GiB": max(r["peak_GiB"] for r in runs), "vs_one": rate / alone if alone else None})
        print(json.dumps(rows[-1]), flush=True)
    (out / "share.json").write_text(json.dumps({"seq": seq, "steps": steps, "rows": rows}, indent=1))


GEMMA3 = {  # Gemma 3 text configurations (Hugging Face config.json of google/gemma-3-270m and -1b-pt)
    "270m": dict(hidden_size=640, intermediate_size=2048, num_hidden_layers=18, num_attention_heads=4,
                 num_key_value_heads=1, head_dim=256, sliding_window=512),
    "1b": dict(hidden_size=1152, intermediate_size=6912, num_hidden_layers=26, num_attention_heads=4,
               num_key_value_heads=1, head_dim=256, sliding_window=512),
}


def finetune_timing(shape: str, steps: int, params_file: str, out: Path, device: str | None = None):
    "`--finetune`: seconds per fine-tuning step of a Gemma 3 of `shape` (random weights), the finetune section's recipe."
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    from unseen.finetune import Task, tiny_gemma
    from unseen.finetune_run import FinetuneConfig
    from unseen.finetune_experiment import parse_conditions, run_experiment
    from unseen.logic import LogicConfig
    params = load_params(params_file)
    device, ft = device or params["base"]["device"], params["finetune"]
    model, tokenizer = tiny_gemma()
    if shape != "tiny":
        layers = GEMMA3[shape]["num_hidden_layers"]
        cfg = Gemma3TextConfig(vocab_size=262_144, tie_word_embeddings=True, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                               layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
                               **GEMMA3[shape])
        with torch.device(device): model = Gemma3ForCausalLM(cfg)  # initialised where it trains: seconds, not minutes
    training = {**ft["training"], "steps": steps, "eval_every": steps, "stop_at_threshold": False, "device": device}
    training["warmup"] = min(training.get("warmup", 5), steps)
    cfg = FinetuneConfig(**training)
    model = model.to(getattr(torch, cfg.dtype)).to(device)
    task = Task.make(tokenizer, LogicConfig.from_dict(ft["problem"], "finetune.problem"), ft["n_names"], 32, 0)
    if device.startswith("cuda"): torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    log, runs = run_experiment(model, tokenizer, task, parse_conditions({"unused": {"pool": "unused"}}), [0], cfg, progress=False)
    seconds = time.perf_counter() - t
    row = {"shape": shape, "params": params_file, "device": device, "parameters": sum(p.numel() for p in model.parameters()),
           "recipe": cfg.recipe, "dtype": cfg.dtype, "batch_size": cfg.batch_size, "steps": steps, "seconds": seconds, "s_per_step": seconds / steps,
           "peak_GiB": torch.cuda.max_memory_allocated() / 2 ** 30 if device.startswith("cuda") else float("nan")}
    print(json.dumps(row), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"finetune-{shape}-{Path(params_file).stem}.json").write_text(json.dumps(row, indent=1))
    runs_total = len(ft["conditions"]) * ft["n_seeds"]
    print(f"the finetune section of {params_file} ({runs_total} runs x {ft['training']['steps']:,} steps) would take about "
          f"{runs_total * ft['training']['steps'] * seconds / steps / 3600:.1f} h at this speed (evaluations every "
          f"{ft['training']['eval_every']} steps not counted)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="params-paper.yaml")
    ap.add_argument("--steps", type=int, default=2000, help="training steps of each smoke run")
    ap.add_argument("--runs", nargs="+", default=["standard", "freeze"], help="experiments (train.experiments) to train")
    ap.add_argument("--out", default="runs/smoke")
    ap.add_argument("--share", type=int, nargs="+", metavar="K", help="instead of the smoke: K training runs at once, for each K")
    ap.add_argument("--share-steps", type=int, default=100, help="timed steps of each --share run")
    ap.add_argument("--finetune", nargs="+", choices=["tiny", *GEMMA3], help="instead of the smoke: time fine-tuning of these Gemma 3 shapes")
    ap.add_argument("--device", help="replaces base.device of --params (--finetune)")
    ap.add_argument("--finetune-steps", type=int, default=30)
    ap.add_argument("--one-run", help=argparse.SUPPRESS)  # a process of --share: its result file
    ap.add_argument("--seq", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one_run: return one_run(args.params, args.share_steps, args.seq, args.one_run)
    if args.share: return share(args.params, args.share, args.share_steps, Path(args.out))
    if args.finetune:
        for shape in args.finetune: finetune_timing(shape, args.finetune_steps, args.params, Path(args.out), args.device)
        return
    params, out = load_params(args.params), Path(args.out)
    train_p = params["train"]["training"]
    steps, batch = args.steps, train_p["batch_size"]
    t_gen = generate(params, out / "data", steps * batch + 1000)
    print(f"generate: {steps * batch + 1000:,} training problems + {params['generate']['test_problems']:,} per scenario "
          f"in {t_gen:.1f} s", flush=True)
    rows, section = [], params["train"]
    for run in args.runs:
        spec = section["experiments"][run]
        training = {**train_p, **spec.get("training", {}), "steps": steps,
                    "warmup": max(1, train_p["warmup"] * steps // train_p["steps"]), "log_every": max(1, steps // 4),
                    "checkpoint_every": 0, "cycles": 1}  # one schedule: a timing of --steps steps, not a learned run
        if "decay_steps" in training:     # the trigger schedule's decay, scaled as the warm-up is
            training["decay_steps"] = max(1, min(training["decay_steps"] * steps // train_p["steps"], steps - training["warmup"] - 1))
        exp = resolve_experiment(run, {run: {**spec, "training": training}}, params["base"]["n_train"], section["model"],
                                 section.get("intervention"), section["training"], params["base"]["device"], params["base"]["dtype"])
        if torch.cuda.is_available(): torch.cuda.reset_peak_memory_stats()
        metrics, t_train = timed(train_experiment, exp, 0, out / "data", out / f"smoke-{run}-s0", progress=False)
        mem = torch.cuda.max_memory_allocated() / 2 ** 30 if torch.cuda.is_available() else float("nan")
        model = load_model(out / f"smoke-{run}-s0" / "model.safetensors", params["base"]["device"])
        decoded, t_eval = timed(evaluate_scenarios, model, metrics["data_dir"], batch_size=params["evaluate"]["batch_size"],
                                device=params["base"]["device"])
        rows.append({"run": run, "parameters": metrics["parameters"], "steps": steps, "train_s": t_train,
                     "step_ms": 1000 * t_train / steps, "peak_GiB": mem, "eval_s": t_eval,
                     **{f"{s}_exact": decoded[s]["exact_match"] for s in ("s1", "s2", "s3")},
                     **{k: metrics[k] for k in ("cos_unseen_unembed", "cos_seen_unembed") if k in metrics}})
        print(json.dumps(rows[-1]), flush=True)
        (out / "smoke.json").write_text(json.dumps(rows, indent=1))   # after each run: a time limit keeps the finished ones
    # the whole train matrix at the measured speed (step time of the first run, which includes its monitoring)
    step_s = rows[0]["train_s"] / steps
    mean_len = float(load_sequences(out / "data" / f"n{params['base']['n_train']}" / "train.safetensors").lengths.mean())
    exps = params["train"]["experiments"]
    total_steps = len(params["matrix"]["seeds"]) * sum(e.get("training", {}).get("steps", train_p["steps"]) for e in exps.values())
    print(f"\n{'run':<14}{'params':>12}{'ms/step':>9}{'peak GiB':>10}{'eval s':>8}{'S1':>6}{'S2':>6}{'S3':>6}")
    for r in rows:
        print(f"{r['run']:<14}{r['parameters']:>12,}{r['step_ms']:>9.1f}{r['peak_GiB']:>10.1f}{r['eval_s']:>8.1f}"
              f"{r['s1_exact']:>6.2f}{r['s2_exact']:>6.2f}{r['s3_exact']:>6.2f}")
    print(f"batch {batch} (mean length {mean_len:.1f} tokens): {batch / step_s:,.0f} problems/s, "
          f"{batch * mean_len / step_s:,.0f} tokens/s in training; the train matrix of {args.params} "
          f"({len(exps)} experiments x {len(params['matrix']['seeds'])} seeds, {total_steps:,} steps) "
          f"would take about {total_steps * step_s / 3600:.1f} h on this device, one run at a time")


if __name__ == "__main__":
    main()
