"""One fine-tuning run's costs on the CPU: its training step, and its held-out evaluation against the plain one, in one process.

    python benchmarks/finetune_step.py [--params params.yaml] [--steps 20] [--profile] [--out DIR]
    python benchmarks/finetune_step.py --model tiny --steps 2 --problems 8      # seconds: what the tests run

The `finetune` stage's model and recipe (params.yaml: Gemma 3 270M, the rows recipe, bf16, one thread), the
letters condition, `--problems` held-out problems (params.yaml's eval_problems). It times, taking turns on the
same weights so the ratios hold on a noisy machine:

    step         one optimiser step of `unseen.finetune_run.finetune`'s loop (batch, forward, backward, clip, AdamW)
    reference    the plain evaluation: every problem, chunks of eval_batch in held-out order padded to the chunk's
                 longest, the task columns copied into new logits, the argmax taken on the bf16 logits and the
                 loss on a float copy of them
    chunks       `score_held_out` with `held_out_chunks`: encoded once, in a fixed random order, each chunk cut to its
                 longest problem; the task columns written into the logits in place; one float copy read by the argmax
                 and the loss
    screened     the same, told the endpoints still to cross (params.yaml's): it stops once none can cross at this
                 evaluation; at step 0 (no derived names right) 52 wrong decide it, read in whole chunks: 64 of 128

The metrics of `reference` and `chunks` are checked equal (derived_exact, answer_acc, exact exactly; the loss to
1e-3, as bf16 matmuls of different shapes round differently). `--profile` prints torch.profiler's table of a few
steps and one plain evaluation. `--out` writes the numbers as JSON (finetune-step.json).
"""
import argparse, json, math, time
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml

from unseen.finetune_experiment import load_experiment, parse_conditions, prepare_conditions
from unseen.finetune_rows import target_logits
from unseen.finetune_run import METRICS, FinetuneConfig, _to, finetune_step, held_out_chunks, score_held_out, trainable


def reference_logits(model, rows, enc) -> tuple:
    "`unseen.finetune_rows.target_logits` as the plain evaluation had it: the task columns copied into a new logits tensor."
    predicts = enc.kind[:, 1:] > 0
    hidden = model.base_model(inputs_embeds=rows.embed(model, enc.ids), attention_mask=enc.mask).last_hidden_state
    h = hidden[:, :-1][predicts]
    out = model.get_output_embeddings()
    logits = F.linear(h, out.weight.detach()).index_copy(1, rows.ids, F.linear(h, rows.input_rows.to(h.dtype)))
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap: logits = torch.tanh(logits / cap) * cap
    problem = torch.arange(len(enc))[:, None].expand_as(predicts)[predicts]
    return logits, enc.ids[:, 1:][predicts], enc.kind[:, 1:][predicts], problem


@torch.no_grad()
def reference_scores(model, rows, task, pool, cfg) -> dict:
    "The plain evaluation: chunks in held-out order, argmax on the logits as they come, metrics weighted by problems."
    model.eval()
    parts, n = [], len(task.held_out)
    for start in range(0, n, cfg.eval_batch):
        enc = _to(task.encode_held_out(start, start + cfg.eval_batch, pool), cfg.device)
        logits, targets, kinds, problem = reference_logits(model, rows, enc) if rows is not None and rows.tied else target_logits(model, rows, enc)
        wrong = logits.argmax(-1) != targets
        right = lambda span: float((torch.bincount(problem[wrong & span], minlength=len(enc)) == 0).float().mean())
        parts.append(({"loss": float(F.cross_entropy(logits.float(), targets)), "derived_exact": right((kinds == 1) | (kinds == 2)),
                       "answer_acc": right(kinds == 4), "exact": right(kinds > 0),
                       "var_acc": float(1 - wrong[kinds == 1].float().mean())}, len(enc)))
    return {k: sum(s[k] * m for s, m in parts) / n for k in METRICS}


def timed(fn, repeat: int) -> tuple:
    "(seconds per call, last result) of `repeat` calls."
    start = time.perf_counter()
    for _ in range(repeat): out = fn()
    return (time.perf_counter() - start) / repeat, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--model", default=None, help="a source of load_causal_lm (default: the params' finetune.model)")
    ap.add_argument("--steps", type=int, default=20, help="timed optimiser steps (after 2 warm-up steps)")
    ap.add_argument("--problems", type=int, default=None, help="held-out problems (default: finetune.eval_problems)")
    ap.add_argument("--repeat", type=int, default=2, help="timed evaluations of each kind")
    ap.add_argument("--profile", action="store_true", help="print torch.profiler's table of 6 steps and one evaluation")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    json_out = Path(args.out) / "finetune-step.json" if args.out else None
    if json_out and json_out.exists(): ap.error(f"{json_out} exists: name another --out folder (this script writes only a new file)")
    p = yaml.safe_load(Path(args.params).read_text())["finetune"]
    model = {"name": args.model, "source": args.model} if args.model else p["model"]
    training = {**p["training"], "threads": 1}
    if args.model == "tiny": training["dtype"] = "float32"
    exp = load_experiment(model, training, p["problem"], p["n_names"], args.problems or p["eval_problems"], 0, "cpu",
                          p.get("cache_dir", "~/.cache/unseen/finetune"))
    torch.set_num_threads(1)
    net, task, cfg = exp.model, exp.task, exp.cfg
    pool = prepare_conditions(exp.tokenizer, parse_conditions({"letters": {"pool": "letters"}}), task, task.seed)[0].pool
    rows, params, opt = trainable(net, task, pool, cfg)   # as `finetune` sets up a run
    counter = iter(range(1, 10 ** 9))

    def step():   # the body of `finetune`'s loop
        return finetune_step(net, rows, task, pool, opt, params, cfg, next(counter))

    n = len(task.held_out)
    chunks = held_out_chunks(task, pool, cfg)
    encode_s, _ = timed(lambda: held_out_chunks(task, pool, cfg), 1)
    padded = sum(int(c.ids.numel()) for c in chunks), sum(int(task.encode_held_out(i, i + cfg.eval_batch, pool).ids.numel())
                                                          for i in range(0, n, cfg.eval_batch))
    need = cfg.endpoints()
    evaluations = {"reference": lambda: reference_scores(net, rows, task, pool, cfg),
                   "chunks": lambda: score_held_out(net, rows, task, pool, cfg, chunks),
                   "screened": lambda: score_held_out(net, rows, task, pool, cfg, chunks, need)}
    times = {k: [] for k in evaluations}
    out = {}
    for _ in range(args.repeat):   # taking turns: a slow spell of the machine hits every kind alike
        for k, fn in evaluations.items():
            t, out[k] = timed(fn, 1); times[k].append(t)
    ref, new = out["reference"], out["chunks"]
    same = all(ref[k] == new[k] for k in ("derived_exact", "answer_acc", "exact")) and abs(ref["loss"] - new["loss"]) < 1e-3
    for _ in range(2): step()
    step_s, _ = timed(step, args.steps)
    eval_s = {k: min(v) for k, v in times.items()}
    print(f"{exp.describe()}; {n} held-out problems, eval_batch {cfg.eval_batch}, recipe {cfg.recipe}, {cfg.dtype}, 1 thread")
    print(f"step      {step_s:7.3f} s  (mean of {args.steps}, batch {cfg.batch_size})")
    print(f"encoding  {encode_s:7.3f} s  once per run; tokens through the body: {padded[0]} cut vs {padded[1]} padded")
    for k, v in eval_s.items():
        print(f"{k:9} {v:7.3f} s  {v / step_s:5.1f} steps  new/old {v / eval_s['reference']:.2f}"
              + (f"  (scored {out[k]['scored']} of {n})" if "scored" in out[k] else ""))
    print(f"metrics equal (reference vs chunks): {same}; reference {ref['derived_exact']:.4f}/{ref['exact']:.4f}, "
          f"chunks {new['derived_exact']:.4f}/{new['exact']:.4f} (derived_exact/exact)")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile, record_function
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(6):
                with record_function("STEP"): step()
            with record_function("EVAL (reference)"): reference_scores(net, rows, task, pool, cfg)
            with record_function("EVAL (chunks)"): score_held_out(net, rows, task, pool, cfg, chunks)
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=30))
    if args.out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        row = {"model": exp.name, "problems": n, "step_s": step_s, "encode_s": encode_s, "eval_s": eval_s,
               "scored": {k: out[k].get("scored", n) for k in out}, "metrics_equal": same,
               "new_over_old": {k: v / eval_s["reference"] for k, v in eval_s.items()}}
        json_out.write_text(json.dumps(row, indent=1))
    if not same: raise SystemExit("the evaluations disagree: " + json.dumps({"reference": ref, "chunks": new}))


if __name__ == "__main__":
    main()
