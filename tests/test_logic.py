"""The generator against an independent solver, determinism, leakage, scenarios and bad parameters."""
import hashlib, json
from pathlib import Path

import numpy as np
import pytest

from unseen.datasets import DataConfig, generate_datasets, load_sequences, load_metadata, training_set, scenario_sets
from unseen.logic import LogicConfig, sample_problems
from unseen.tokens import Vocab, serialize, scenario_names, draw_names
from reference import check_sequence

SMALL = dict(train_problems=3000, test_problems=300)
VARIED = LogicConfig(n_vars=(5, 9), n_facts=(1, 3), depth=(0, 4), body_size=(1, 3), n_distractors=(0, 4),
                     distractor_body_size=(1, 3))





@pytest.mark.parametrize("cot_format", ["rules", "arrow"])
@pytest.mark.parametrize("problem", [LogicConfig(), VARIED, LogicConfig(distractor_heads="unreachable")],
                         ids=["default", "varied", "unreachable-heads"])
def test_labels_and_chains_match_an_independent_solver(problem, cot_format):
    cfg = DataConfig(n_train=40, cot_format=cot_format, problem=problem, **SMALL)
    vocab = cfg.vocab
    for name, seqs in {"train": training_set(cfg, seed=1, progress=False), **scenario_sets(cfg, seed=1)}.items():
        for i in range(len(seqs)):
            words, prompt_len = [vocab.tokens[t] for t in seqs[i]], int(seqs.prompt_len[i])
            target, label, depth = check_sequence(words, prompt_len, cot_format)
            assert words[prompt_len:] == target, (name, i, " ".join(words))
            assert bool(seqs.label[i]) == label and int(seqs.depth[i]) == depth, (name, i, " ".join(words))


def test_balanced_by_label_and_depth():
    b = sample_problems(VARIED, 10_000, np.random.default_rng(0))
    counts = np.array([[((b.label == lab) & (b.depth == d)).sum() for d in range(5)] for lab in (True, False)])
    assert counts.min() == counts.max() == 1000


def test_false_queries_are_mentioned_in_the_prompt():
    cfg = DataConfig(n_train=40, problem=VARIED, **SMALL)
    seqs = training_set(cfg, seed=2, progress=False)
    for i in np.flatnonzero(~seqs.label)[:500]:
        prompt = seqs.prompt(i)
        query = prompt[-2]
        assert (prompt[1:-3] == query).any()


def _file_hashes(d):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(d).iterdir())}


def test_same_parameters_and_seed_give_identical_files(tmp_path):
    cfg = DataConfig(**SMALL)
    generate_datasets(cfg, 7, tmp_path / "a", progress=False)
    generate_datasets(cfg, 7, tmp_path / "b", progress=False)
    generate_datasets(cfg, 8, tmp_path / "c", progress=False)
    a, b, c = (_file_hashes(tmp_path / x) for x in "abc")
    assert a == b
    assert a["train.safetensors"] != c["train.safetensors"] and a["test_s3.safetensors"] != c["test_s3.safetensors"]
    assert not (tmp_path / "a.partial").exists()


def test_training_data_never_contains_an_unseen_token(tmp_path):
    cfg = DataConfig(n_train=10, n_unseen=8, problem=LogicConfig(n_vars=(5, 8)), **SMALL)
    generate_datasets(cfg, 0, tmp_path / "d", progress=False)
    train = load_sequences(tmp_path / "d/train.safetensors")
    assert not cfg.vocab.is_unseen(train.tokens).any()
    assert set(np.unique(train.tokens[cfg.vocab.is_name(train.tokens)])) == set(cfg.vocab.seen_ids)
    assert load_metadata(tmp_path / "d/train.safetensors")["seed"] == 0


def test_the_three_scenarios_rename_the_same_problems():
    cfg = DataConfig(n_train=30, n_unseen=20, problem=VARIED, **SMALL)
    vocab = cfg.vocab
    sets = scenario_sets(cfg, seed=3)
    s1, s2, s3 = sets["s1"], sets["s2"], sets["s3"]
    assert (s1.offsets == s2.offsets).all() and (s1.offsets == s3.offsets).all()
    for i in range(len(s1)):
        a, b, c = s1[i], s2[i], s3[i]
        names = vocab.is_name(a)
        assert (a[~names] == b[~names]).all() and (a[~names] == c[~names]).all()  # same structure tokens
        assert not vocab.is_unseen(a).any()                                     # 1: all seen
        query = a[s1.prompt_len[i] - 2]
        renamed = a != b
        assert (renamed == (a == query)).all()                                  # 2: only the query renamed, everywhere
        assert len(set(b[renamed])) == 1 and vocab.is_unseen(b[renamed]).all()
        assert vocab.is_unseen(c[names]).all()                                  # 3: all names unseen
        pairs = set(zip(a[names].tolist(), c[names].tolist()))                  # ...by a one-to-one renaming
        assert len({x for x, _ in pairs}) == len({y for _, y in pairs}) == len(pairs)


def test_names_are_distinct_within_a_problem():
    names = draw_names(np.random.default_rng(0), np.arange(10, 18), 5000, 8)
    assert all(len(set(r)) == 8 for r in names.tolist())


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_train=4), "n_train=4"),                                          # more variables than names
    (dict(n_unseen=3), "n_unseen=3"),
    (dict(problem=dict(depth=[0, 8])), "n_vars"),                            # deeper than the variables allow
    (dict(problem=dict(n_facts=-1)), "n_facts"),                             # negative count
    (dict(train_problems=-1), "train_problems"),
    (dict(problem=dict(depht=3)), "'depht'"),                                # unknown key
    (dict(cot_format="prose"), "cot_format"),
    (dict(problem=dict(body_size=[2, 1])), "body_size"),
    (dict(problem=dict(distractor_heads="some")), "distractor_heads"),
])
def test_impossible_settings_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        DataConfig.from_dict(kwargs)


def test_unknown_top_level_key():
    with pytest.raises(ValueError, match="'n_trian'"):
        DataConfig.from_dict({"n_trian": 5})


def test_unreachable_distractor_heads_stay_off_the_proof():
    b = sample_problems(LogicConfig(distractor_heads="unreachable", n_distractors=(2, 4)), 3000, np.random.default_rng(5))
    closure = (b.facts.max(1) + 1 + b.depth)[:, None]            # local variables below this are facts and proof heads
    chain = np.zeros_like(b.rule_head, bool)
    for j in range(b.fired.shape[1]):
        fired = b.fired[:, j] >= 0
        chain[np.flatnonzero(fired), b.fired[fired, j]] = True
    distractor = (b.rule_head >= 0) & ~chain
    assert (b.rule_head[distractor] >= np.broadcast_to(closure, b.rule_head.shape)[distractor]).all()
