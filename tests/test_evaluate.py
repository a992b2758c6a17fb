"""Evaluation: greedy decoding, exact match and answer accuracy, token kinds and the teacher-forced diagnostic."""
import json

import numpy as np
import pytest
import torch

from unseen.datasets import DataConfig, generate_datasets, scenario_sets
from unseen.evaluate import (ANSWER, KINDS, PROMPT, OracleModel, diagnose, diagnose_scenarios, evaluate,
                             evaluate_scenarios, greedy_decode, load_scenarios, score, token_kinds)
from unseen.model import ModelConfig, Transformer
from unseen.tokens import COMMA, EOS, FALSE, QMARK, TRUE, Sequences, Vocab

torch.set_num_threads(1)
VOCAB = DataConfig().vocab


@pytest.fixture(scope="module", params=["rules", "arrow"])
def sets(request):
    return request.param, scenario_sets(DataConfig(test_problems=60, cot_format=request.param), seed=3)


def from_rows(rows, prompt_len, label=None, depth=None):
    "A `Sequences` from a list of token arrays."
    n = len(rows)
    return Sequences(np.concatenate(rows).astype(np.int16), np.concatenate([[0], np.cumsum([len(r) for r in rows])]),
                     np.asarray(prompt_len), np.ones(n, bool) if label is None else np.asarray(label),
                     np.zeros(n, np.uint8) if depth is None else np.asarray(depth))


def with_targets(seqs, targets):
    "`seqs` with its targets replaced: a stand-in for generations."
    return from_rows([np.concatenate([seqs.prompt(i), np.asarray(t, np.int64)]) for i, t in enumerate(targets)],
                     seqs.prompt_len, seqs.label, seqs.depth)


# ---- decoding ----------------------------------------------------------------------------------

def test_oracle_solves_every_scenario(sets):
    fmt, scenarios = sets
    for seqs in scenarios.values():
        generated = greedy_decode(OracleModel(seqs, len(VOCAB)), seqs, batch_size=16)
        assert np.array_equal(generated.tokens, seqs.tokens)
        m = evaluate(OracleModel(seqs, len(VOCAB)), seqs, batch_size=16)
        assert (m["exact_match"], m["answer"], m["echo"]) == (1.0, 1.0, 1.0)


def naive_greedy(model, prompt, max_new):
    "One problem, the whole prefix recomputed every step: the obvious reference."
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(max_new):
            seq.append(int(model(torch.tensor([seq]))[0, -1].argmax()))
            if seq[-1] == EOS: break
    return seq


@pytest.mark.parametrize("options", [dict(), dict(positions="learned", copy="pointer"), dict(copy="embed", identity_attention=True), dict(copy="mixture")])
def test_cached_decoding_equals_recomputation(options):
    seqs = scenario_sets(DataConfig(test_problems=24), seed=4)["s3"]
    torch.manual_seed(1)
    model = Transformer(ModelConfig(vocab_size=len(VOCAB), d_model=32, n_head=4, d_mlp=64, **options))
    generated = greedy_decode(model, seqs, batch_size=5, max_new_tokens=7)
    for i in range(len(seqs)):
        assert generated[i].tolist() == naive_greedy(model, seqs.prompt(i).tolist(), 7)
    assert np.array_equal(greedy_decode(model, seqs, batch_size=64, max_new_tokens=7, use_cache=False).tokens, generated.tokens)


def test_decoding_stops_at_eos_and_restores_training_mode():
    seqs = scenario_sets(DataConfig(test_problems=20), seed=5)["s1"]
    model = OracleModel(seqs, len(VOCAB), corrupt=np.zeros(len(seqs.tokens), bool))
    model.train()
    short = greedy_decode(model, seqs, max_new_tokens=2)
    assert all(len(short.target(i)) == min(2, len(seqs.target(i))) for i in range(len(seqs)))
    assert model.training


# ---- scoring -----------------------------------------------------------------------------------

def test_answer_is_wrong_when_the_generation_is_malformed():
    seqs = scenario_sets(DataConfig(test_problems=8), seed=6)["s1"]
    t = [seqs.target(i).astype(np.int64) for i in range(len(seqs))]
    answer = lambda i: TRUE if seqs.label[i] else FALSE
    q = lambda i: t[i][-3]
    targets = [[],                                  # nothing
               [COMMA, COMMA, EOS],                 # no `?`
               [QMARK, q(2)],                       # `?` and echo, nothing after
               [QMARK, q(3), COMMA, EOS],           # not T/F where the answer belongs
               [QMARK, q(4) + 1, answer(4), EOS],   # wrong echo, right answer: counts for answer only
               [COMMA, QMARK, q(5), answer(5), EOS],  # broken chain of thought, right echo and answer
               list(t[6]) + [COMMA],                # right, but does not stop at <eos>
               list(t[7])]                          # right
    m = score(with_targets(seqs, targets), seqs)
    assert m["exact_match"] == 1 / 8
    assert m["answer"] == 4 / 8
    assert m["echo"] == 5 / 8


def test_metrics_by_depth_add_up():
    seqs = scenario_sets(DataConfig(test_problems=300), seed=7)["s2"]
    rng = np.random.default_rng(0)
    targets = [seqs.target(i).astype(np.int64) for i in range(len(seqs))]
    for i in rng.choice(len(seqs), 120, replace=False):  # damage a random token of 120 targets
        j = rng.integers(len(targets[i]))
        targets[i][j] = (targets[i][j] + 1) % len(VOCAB)
    m = score(with_targets(seqs, targets), seqs)
    by = m["by_depth"]
    assert sorted(int(d) for d in by) == sorted(np.unique(seqs.depth).tolist())
    assert sum(d["problems"] for d in by.values()) == m["problems"] == len(seqs)
    for key in ("exact_match", "answer", "echo"):
        assert sum(d["problems"] * d[key] for d in by.values()) / len(seqs) == pytest.approx(m[key])
    assert 0.55 < m["exact_match"] < 0.65


# ---- token kinds -------------------------------------------------------------------------------

SMALL = Vocab(n_train=3, n_unseen=3)
S, CS, CU, NS, NU, A = range(len(KINDS))


@pytest.mark.parametrize("fmt, text, prompt_len, expected", [
    ("rules", "<bos> s0 u1 , u1 s2 , s0 . ? s2 = s0 u1 , u1 s2 , ? s2 T <eos>", 12, [NS, CU, S, NU, CS, S, S, CS, A, S]),
    ("rules", "<bos> u0 s1 u2 , s1 . ? u2 = ? u2 F <eos>", 10, [S, CU, A, S]),
    ("arrow", "<bos> s0 > u1 , u1 > s2 , s0 . ? s2 = u1 s2 ? s2 T <eos>", 14, [NU, NS, S, CS, A, S]),
    ("arrow", "<bos> u0 > s1 , s1 . ? u0 = ? u0 F <eos>", 10, [S, CU, A, S]),
])
def test_kinds_of_a_hand_written_example(fmt, text, prompt_len, expected):
    filler = SMALL.encode("<bos> s0 . ? s0 = ? s0 T <eos>")  # a sequence before it, so offsets matter
    seqs = from_rows([filler, SMALL.encode(text)], [6, prompt_len])
    kinds = token_kinds(seqs, SMALL, fmt)
    assert kinds.tolist() == [PROMPT] * 6 + [S, CS, A, S] + [PROMPT] * prompt_len + expected


def kinds_by_loop(seqs, vocab, fmt):
    "The kinds one sequence and one token at a time, from the definition."
    out = []
    for i in range(len(seqs)):
        target = seqs.target(i).tolist()
        out += [PROMPT] * int(seqs.prompt_len[i])
        cot, tail = target[:-4], target[-4:]
        for j, tok in enumerate(cot):
            if not vocab.is_name(tok): out.append(S); continue
            starts_rule = fmt == "arrow" or j == 0 or cot[j - 1] == COMMA
            out.append((NU if vocab.is_unseen(tok) else NS) if starts_rule else (CU if vocab.is_unseen(tok) else CS))
        out += [S, CU if vocab.is_unseen(tail[1]) else CS, A, S]
    return np.array(out)


def test_vectorised_kinds_match_the_definition(sets):
    fmt, scenarios = sets
    for seqs in scenarios.values():
        assert np.array_equal(token_kinds(seqs, VOCAB, fmt), kinds_by_loop(seqs, VOCAB, fmt))


def test_kinds_reject_a_foreign_format():
    seqs = from_rows([SMALL.encode("<bos> s0 . ? s0 = s0 T <eos>")], [6])
    with pytest.raises(ValueError, match="end"): token_kinds(seqs, SMALL)
    with pytest.raises(ValueError, match="cot_format"): token_kinds(seqs, SMALL, "chain")


# ---- the teacher-forced diagnostic -------------------------------------------------------------

def test_corrupting_one_kind_drops_exactly_that_kind(sets):
    fmt, scenarios = sets
    for kind in range(len(KINDS)):
        seqs = scenarios["s3" if kind in (CU, NU) else "s1"]
        kinds = token_kinds(seqs, VOCAB, fmt)
        if not (kinds == kind).any(): continue
        corrupted = OracleModel(seqs, len(VOCAB), corrupt=kinds == kind)
        d = diagnose(corrupted, seqs, VOCAB, fmt, batch_size=16)
        assert d["accuracy"][KINDS[kind]] == 0.0
        assert all(v in (1.0, None) for k, v in d["accuracy"].items() if k not in (KINDS[kind], "target"))
        assert d["tokens"]["target"] == sum(d["tokens"][k] for k in KINDS) == int((kinds != PROMPT).sum())
        has_kind = np.array([(kinds[seqs.offsets[i]:seqs.offsets[i + 1]] == kind).any() for i in range(len(seqs))])
        m = evaluate(corrupted, seqs, batch_size=16)
        assert m["exact_match"] == pytest.approx(1 - has_kind.mean())
        if kind == ANSWER: assert m["answer"] == 0.0
        if kind in (CS, CU, NS, NU): assert m["answer"] == m["exact_match"]  # the oracle stops after its first error


def test_teacher_forced_loss_is_low_for_the_oracle_and_high_where_corrupted():
    seqs = scenario_sets(DataConfig(test_problems=30), seed=8)["s2"]
    kinds = token_kinds(seqs, VOCAB)
    d = diagnose(OracleModel(seqs, len(VOCAB), corrupt=kinds == ANSWER), seqs, VOCAB)
    assert d["loss"]["answer"] > d["loss"]["structure"]
    assert d["accuracy"]["copy_unseen"] == 1.0 and d["tokens"]["copy_unseen"] >= len(seqs)


# ---- the scenarios of a data directory ---------------------------------------------------------

def test_scenarios_from_a_data_directory(tmp_path):
    cfg = DataConfig(train_problems=10, test_problems=25, cot_format="arrow")
    generate_datasets(cfg, seed=9, out_dir=tmp_path / "data", progress=False)
    sets, vocab, fmt = load_scenarios(tmp_path / "data")
    assert (vocab, fmt) == (cfg.vocab, "arrow")
    knows_s2 = OracleModel(sets["s2"], len(vocab))
    metrics = evaluate_scenarios(knows_s2, tmp_path / "data", batch_size=8)
    diagnosis = diagnose_scenarios(knows_s2, tmp_path / "data", batch_size=8)
    assert metrics["s2"]["exact_match"] == 1.0 and metrics["s3"]["exact_match"] == 0.0
    assert diagnosis["s2"]["accuracy"]["target"] == 1.0
    assert diagnosis["s1"]["tokens"]["copy_unseen"] == 0 and diagnosis["s1"]["accuracy"]["copy_unseen"] is None
    assert json.loads(json.dumps(metrics, allow_nan=False)) == metrics
    assert json.loads(json.dumps(diagnosis, allow_nan=False)) == diagnosis


def test_clear_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="generate"): evaluate_scenarios(None, tmp_path)
    generate_datasets(DataConfig(train_problems=10, test_problems=5), seed=0, out_dir=tmp_path / "data", progress=False)
    small_model = Transformer(ModelConfig(vocab_size=50, d_model=16, n_head=2, d_mlp=32))
    with pytest.raises(ValueError, match="vocab_size=50"): evaluate_scenarios(small_model, tmp_path / "data")
