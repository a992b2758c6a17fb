"""Lemma 4.1 (docs/paper.md §3), checked numerically on softmax regression with unseen classes (unseen/lemma.py)."""
import math

import numpy as np
import pytest
import torch

from unseen.geometry import mean_pairwise_cosine
from unseen.lemma import (TOLERANCE, LemmaConfig, absolute_bound, cross_entropy_gradient, gd_step, init_unembedding,
                          lemma_bound, make_features, probabilities, run_lemma, summarise)

torch.set_num_threads(1)


def random_valid_configs(n=6, seed=123):
    "Configurations inside the lemma's hypothesis (eta*lambda <= 1): r, eta, lambda, K, M, d and init scale all vary."
    rng = np.random.default_rng(seed)
    configs = []
    for k in range(n):
        eta_lambda = 1.0 if k == 0 else float(rng.uniform(0.02, 1.0))  # the edge eta*lambda = 1 included
        lr = float(rng.choice([0.05, 0.3, 1.0, 3.0]))
        configs.append(LemmaConfig(n_seen=int(rng.integers(2, 9)), n_unseen=int(rng.integers(2, 10)),
                                   dim=int(rng.integers(2, 20)), per_class=int(rng.integers(4, 16)),
                                   radius=float(rng.uniform(0.3, 5.0)), spread=float(rng.uniform(0.2, 2.0)),
                                   init_std=float(rng.choice([0.2, 1.0, 3.0])), lr=lr, weight_decay=eta_lambda / lr,
                                   steps=30, seed=int(rng.integers(1000))))
    return configs


def test_gradient_is_the_lemmas():
    cfg = LemmaConfig(n_seen=3, n_unseen=4, dim=5, per_class=6, init_std=1.0, seed=3)
    h, y = make_features(cfg)
    U = init_unembedding(cfg)
    W = U.clone().requires_grad_()
    torch.nn.functional.cross_entropy(h @ W.T, y).backward()
    grad = cross_entropy_gradient(U, h, y)
    assert torch.allclose(grad, W.grad, atol=1e-12)
    p = probabilities(U, h)
    assert torch.allclose(grad[3:], p[:, 3:].T @ h / len(h), atol=1e-12)  # unseen rows: E[p_j h], no target term
    new = gd_step(U, h, y, 0.7, 0.3)
    assert torch.allclose(new[3:], (1 - 0.21) * U[3:] - 0.7 * p[:, 3:].T @ h / len(h), atol=1e-12)


def test_features_have_norm_r_and_unseen_classes_are_never_targets():
    cfg = LemmaConfig(radius=3.5, n_seen=5, n_unseen=7)
    h, y = make_features(cfg)
    assert torch.allclose(h.norm(dim=1), torch.full((len(h),), 3.5, dtype=h.dtype), atol=1e-12)
    assert set(y.tolist()) == set(range(5))


@pytest.mark.parametrize("cfg", random_valid_configs(), ids=lambda c: f"el{c.eta_lambda:.2f}-r{c.radius:.1f}-K{c.n_seen}-M{c.n_unseen}")
def test_bound_holds_at_every_step_when_eta_lambda_at_most_1(cfg):
    df = run_lemma(cfg)
    measured = df.dropna(subset=["ratio_max"])
    assert len(measured) >= 3
    gap = (measured.ratio_max - measured.bound).max()
    assert gap <= TOLERANCE, f"ratio exceeds 1 - eta*lambda + eta*r^2*p by {gap:.3g}"
    # the sharper form: ratio <= 1 - eta*lambda wherever eta*r^2*p <= 2(1 - eta*lambda)
    r, el = df.attrs["r"], cfg.eta_lambda
    sharp = measured[cfg.lr * r * r * measured.p_unseen <= 2 * (1 - el)]
    assert (sharp.ratio_max <= sharp.decay + TOLERANCE).all()


def test_bound_recomputed_from_scratch():
    "The recorded bound is 1 - eta*lambda + eta*r^2*p_t with p_t the largest unseen probability at U_t."
    cfg = LemmaConfig(steps=5, radius=1.7, lr=0.4, weight_decay=0.5)
    df = run_lemma(cfg)
    h, y = make_features(cfg)
    U = init_unembedding(cfg)
    for t in range(cfg.steps):
        p_t = float(probabilities(U, h)[:, cfg.n_seen:].max())
        assert math.isclose(df.bound[t], 1 - 0.2 + 0.4 * 1.7 ** 2 * p_t, rel_tol=1e-9)
        U = gd_step(U, h, y, cfg.lr, cfg.weight_decay)
    assert lemma_bound(0.5, 3.0, 2.0, 0.1) == pytest.approx(-0.3)
    assert absolute_bound(0.5, 3.0, 2.0, 0.1) == pytest.approx(0.7)


@pytest.mark.parametrize("kwargs", [dict(weight_decay=3.0), dict(radius=3.0, lr=1.0, weight_decay=1.2),
                                    dict(weight_decay=5.0)], ids=["el1.5", "el1.2-positive-bound", "el2.5"])
def test_printed_bound_fails_when_eta_lambda_above_1(kwargs):
    s = summarise(run_lemma(LemmaConfig(steps=30, **kwargs)))
    assert s["eta_lambda"] > 1
    assert s["max_ratio_minus_bound"] > 0.05 and s["steps_over_bound"] > 5
    assert s["max_ratio_minus_abs_bound"] <= TOLERANCE          # with |1 - eta*lambda| the proof goes through
    assert s["min_ratio"] >= s["eta_lambda"] - 1 - TOLERANCE     # and the ratio is at least eta*lambda - 1
    if kwargs.get("weight_decay") != 3.0:                        # violated where the printed bound is positive too
        assert s["steps_over_positive_bound"] > 5


def test_unseen_rows_collapse_under_gd_while_seen_rows_stay_apart():
    df = run_lemma(LemmaConfig(steps=150))
    first, last = df.iloc[0], df.iloc[-1]
    assert first.cos_unseen < 0.2 and last.cos_unseen > 0.999
    assert df.cos_unseen.iloc[::10].is_monotonic_increasing
    assert last.dist_unseen < 1e-5 * first.dist_unseen
    assert last.cos_seen < 0.1 and last.accuracy > 0.9
    assert mean_pairwise_cosine(init_unembedding(LemmaConfig())[8:]) < 0.2


def test_adamw_aligns_unseen_rows_without_the_gd_contraction():
    gd, adamw = run_lemma(LemmaConfig(steps=150)), run_lemma(LemmaConfig(steps=150, optimizer="adamw"))
    s, a = summarise(gd), summarise(adamw)
    assert a["cos_unseen_last"] > 0.95 and a["cos_seen_last"] < 0.1
    assert a["steps_over_bound"] > a["measured_steps"] // 2      # the GD bound does not hold for AdamW
    assert a["dist_unseen_last"] > 1e3 * s["dist_unseen_last"]


def test_config_is_validated():
    with pytest.raises(ValueError, match="optimizer"): LemmaConfig(optimizer="sgd")
    with pytest.raises(ValueError, match="unseen"): LemmaConfig(n_unseen=1)
    with pytest.raises(ValueError): LemmaConfig(radius=0)
