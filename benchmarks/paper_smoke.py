"""A short run of the real stage notebooks at paper scale (on a GPU), without Jupyter or DVC.

    python benchmarks/paper_smoke.py [--params params-paper.yaml] [--steps 2000] [--runs standard freeze] [--out runs/smoke]

Executes the code cells of nbs/stages/{generate,train,evaluate}.ipynb in this process (plain `exec`,
the stage's parameters from `--params` set after its `parameters` cell, as papermill would: GPU
machines often have PyTorch but no Jupyter), with the parameters file as it is except: only the main
training vocabulary, enough training problems for `--steps`, and `--steps` training steps (warm-up
scaled with them). Prints each stage's wall time, training steps/s and tokens/s, peak GPU memory,
each run's greedy exact match per scenario, and the time the whole `train` matrix of the parameters
file would take at this speed. Outputs go to `--out`, checkpoints to runs/checkpoints/smoke-*.
"""
import argparse, ast, json, os, time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
import torch

from unseen.datasets import load_sequences
from unseen.pipeline import load_params, stage_parameters


def declared(notebook: Path) -> tuple[dict, set]:
    "The notebook and the names its `parameters` cell assigns (papermill's rule, read with `ast`)."
    # not unseen.pipeline.declared_parameters: that one asks papermill, which GPU machines often lack
    nb = json.loads(notebook.read_text())
    cell = next((c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None: raise ValueError(f"{notebook} has no cell tagged 'parameters'")
    tree = ast.parse("".join(cell["source"]))
    return nb, {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}


def exec_stage(name: str, params: dict, overrides: dict) -> tuple[dict, float]:
    "Run stage `name`'s notebook in-process with its parameters; its namespace and wall time."
    notebook = Path("nbs/stages") / f"{name}.ipynb"
    nb, names = declared(notebook)
    parameters = stage_parameters(name, params, names, overrides)
    ns = {"__name__": f"stage_{name}"}
    t = time.perf_counter()
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        exec(compile("".join(cell["source"]), f"{notebook}#cell{i}", "exec"), ns)
        if "parameters" in cell.get("metadata", {}).get("tags", []): ns.update(parameters)   # papermill's injected cell
    if torch.cuda.is_available(): torch.cuda.synchronize()
    return ns, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="params-paper.yaml")
    ap.add_argument("--steps", type=int, default=2000, help="training steps of each smoke run")
    ap.add_argument("--runs", nargs="+", default=["standard", "freeze"], help="experiments (train.experiments) to train")
    ap.add_argument("--out", default="runs/smoke")
    args = ap.parse_args()
    params, out = load_params(args.params), Path(args.out)
    train_p = params["train"]["training"]
    steps, batch = args.steps, train_p["batch_size"]
    gen = {"n_train_sweep": [], "train_problems": steps * batch + 1000, "out_dir": str(out / "data")}
    _, t_gen = exec_stage("generate", params, gen)
    print(f"generate: {gen['train_problems']:,} training problems + {params['generate']['test_problems']:,} per scenario "
          f"in {t_gen:.1f} s", flush=True)
    rows = []
    for run in args.runs:
        spec = params["train"]["experiments"][run]
        training = {**train_p, **spec.get("training", {}), "steps": steps,
                    "warmup": max(1, train_p["warmup"] * steps // train_p["steps"]), "log_every": max(1, steps // 4),
                    "checkpoint_every": 0}
        spec = {**spec, "training": training}
        if torch.cuda.is_available(): torch.cuda.reset_peak_memory_stats()
        ns, t_train = exec_stage("train", params, {"run": run, "experiments": {run: spec}, "seed": 0,
                                                   "data_dir": str(out / "data"), "out_dir": str(out / f"smoke-{run}-s0")})
        mem = torch.cuda.max_memory_allocated() / 2 ** 30 if torch.cuda.is_available() else float("nan")
        ev, t_eval = exec_stage("evaluate", params, {"run": run, "seed": 0, "train_dir": str(out / f"smoke-{run}-s0"),
                                                     "out_dir": str(out / f"eval-{run}-s0")})
        m = ev["metrics"]
        rows.append({"run": run, "parameters": ns["metrics"]["parameters"], "steps": steps, "train_s": t_train,
                     "step_ms": 1000 * t_train / steps, "peak_GiB": mem, "eval_s": t_eval,
                     **{f"{s}_exact": m[f"{s}_exact_match"] for s in ("s1", "s2", "s3")},
                     **{k: ns["metrics"][k] for k in ("cos_unseen_unembed", "cos_seen_unembed") if k in ns["metrics"]}})
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
