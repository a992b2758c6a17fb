"""Reruns keep git clean where the science does not change: the lemma stage's files, computed with another CPU's kernels,
are byte for byte the committed ones (numbers rounded by unseen.figure_files, figures snapped, PDFs undated)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pipeline_helpers import _copy_working_tree

ROOT = Path(__file__).resolve().parents[1]

# the lemma stage's library calls (nbs/stages/lemma.ipynb) with params.yaml's section, writing to argv[1]
LEMMA = """
import sys, yaml, torch
from unseen.lemma import assert_theorem, lemma_configs, lemma_metrics, run_lemma, save_contraction_figure, save_metrics, summarise
torch.set_num_threads(1)
p = yaml.safe_load(open("params.yaml"))
configs = lemma_configs(seed=p["base"]["seed"], **p["lemma"])
runs = {name: run_lemma(cfg) for name, cfg in configs.items()}
summaries = {name: summarise(df) for name, df in runs.items()}
assert_theorem(summaries)
save_metrics(lemma_metrics(summaries), sys.argv[1])
save_contraction_figure(runs, sys.argv[1])
"""

# other vector kernels than this CPU's own: PyTorch's generic ones, or AVX2's; MKL's reproducible mode. Each moves the
# lemma's unrounded numbers by 1e-16 to 1e-8 (ratios near the float64 floor), as another machine does.
KERNELS = {"generic": {"ATEN_CPU_CAPABILITY": "default"}, "avx2-mkl-compatible": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"}}


@pytest.mark.parametrize("kernels", KERNELS, ids=list(KERNELS))
def test_lemma_files_on_other_kernels_are_the_committed_bytes(tmp_path, kernels):
    if yaml.safe_load((ROOT / "params.yaml").read_text())["base"].get("mark"):
        pytest.skip("params.yaml is a profile's, not the committed results'")
    env = {**os.environ, **KERNELS[kernels], "UNSEEN_MARK": ""}
    subprocess.run([sys.executable, "-c", LEMMA, str(tmp_path)], cwd=ROOT, env=env, check=True)
    committed = {"metrics.json": ROOT / "runs/lemma/metrics.json",
                 **{f"lemma_contraction.{ext}": ROOT / f"figures/lemma_contraction.{ext}" for ext in ("csv", "pdf", "png")}}
    differ = [name for name, path in committed.items() if (tmp_path / name).read_bytes() != path.read_bytes()]
    assert not differ, f"a rerun with {kernels} kernels rewrites {differ}: rounding in unseen/figure_files.py no longer absorbs it"


@pytest.mark.slow
def test_the_lemma_stage_notebook_is_the_same_file_on_other_kernels(tmp_path):
    "The executed notebook is a DVC output: run by hand twice, with this CPU's kernels and with generic ones, it is one file."
    if yaml.safe_load((ROOT / "params.yaml").read_text())["base"].get("mark"):
        pytest.skip("params.yaml is a profile's, not the committed results'")
    stage = str(Path(sys.executable).parent / "unseen-stage")
    repo = tmp_path / "repo"   # a copy: the executed notebooks land in its runs/notebooks, not in this checkout's
    _copy_working_tree(repo)
    notebooks = []
    for name, kernels in {"native": {}, **KERNELS}.items():
        where = tmp_path / name
        args = [stage, "lemma", "-p", f"out_dir={where}/runs", "-p", f"figures_dir={where}/figures", "--tag", f"t48{name}"]
        subprocess.run(args, cwd=repo, env={**os.environ, **kernels}, check=True, capture_output=True)
        executed = repo / f"runs/notebooks/lemma-t48{name}.ipynb"
        # the notebook names its own out_dir and tag: those differ by construction, nothing else may
        notebooks.append(executed.read_text().replace(str(where), "WHERE").replace(f"t48{name}", "TAG"))
        executed.unlink()
    assert len(set(notebooks)) == 1, "the lemma stage's executed notebook differs between kernels: dvc.lock would change"
