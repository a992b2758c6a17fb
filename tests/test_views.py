"""DVC's views of a few columns: `dvc metrics show` lists one small file of headline numbers, the README's `dvc exp show`
command fits a 160-column terminal, and `dvc plots show` draws static images that need no network."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DVC = str(Path(sys.executable).parent / "dvc")
HEADLINE = "runs/results/headline.json"


def _dvc(*args, columns=160):
    env = {**os.environ, "COLUMNS": str(columns), "DVC_NO_ANALYTICS": "1"}
    return subprocess.run([DVC, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout


def test_metrics_are_one_small_file_of_headline_numbers():
    assert yaml.safe_load((ROOT / "dvc.yaml").read_text())["metrics"] == [HEADLINE]
    numbers = [v for group in json.loads((ROOT / HEADLINE).read_text()).values() for v in group.values()]
    assert 8 <= len(numbers) <= 15 and all(-1 <= v <= 1 for v in numbers), numbers
    shown = json.loads(_dvc("metrics", "show", "--json"))[""]["data"]
    assert list(shown) == [HEADLINE]


def test_the_readmes_exp_show_fits_160_columns_with_every_headline_number():
    command = re.search(r"^(dvc exp show [^#\n]*?)\s*(#|$)", (ROOT / "README.md").read_text(), re.M).group(1)
    assert command in (ROOT / "docs/pipeline.md").read_text()   # one command, on both pages
    args = [a.strip("'") for a in re.findall(r"'[^']*'|\S+", command)][1:]
    table = _dvc(*args, "--no-pager")
    lines = table.rstrip("\n").splitlines()
    assert max(len(l.rstrip()) for l in lines) <= 160, table
    header = next(l for l in lines if "Experiment" in l).split()
    keys = [f"{g}.{k}" for g, d in json.loads((ROOT / HEADLINE).read_text()).items() for k in d]
    assert [h for h in header if h != "Experiment"] == keys, header   # every number, none cut to "…"
    assert "…" not in table


def test_plots_are_static_images_that_render_offline(tmp_path):
    dvc_yaml = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    assert "plots" not in dvc_yaml   # a top-level vega-lite plot loads vega from a CDN: blank offline
    declared = [next(iter(p)) if isinstance(p, dict) else p for s in dvc_yaml["stages"].values() for p in s.get("plots", [])]
    assert declared and all(p.endswith(".png") for p in declared), declared
    _dvc("plots", "show", "-o", str(tmp_path / "plots"))
    html = (tmp_path / "plots/index.html").read_text()
    assert not re.search(r"(src|href)=[\"']?https?:", html), "the page loads something from the network"
    assert html.count("<img") == len(declared)
