"The committed result tables are what the results stage's code makes of the committed evaluations."
from pathlib import Path

import yaml

from unseen.results import collect, write_comparisons, write_results

ROOT = Path(__file__).resolve().parents[1]


def _params():
    return yaml.safe_load((ROOT / "params.yaml").read_text())["results"]


def test_the_committed_tables_recompute_from_the_committed_evaluations(tmp_path):
    p = _params()
    every = collect(ROOT / "runs/eval")
    runs = every[every["run"].isin(p["experiments"])]
    assert len(runs) >= 3 * len(p["experiments"])   # every row of the table has its seeds
    write_results(runs, p["experiments"], tmp_path)
    write_comparisons(every, p["controls"], p["parts"], p["sweep"], tmp_path, length=p["length"])
    for name in ["table.md", "comparisons.md"]:
        assert (tmp_path / name).read_text() == (ROOT / "runs/results" / name).read_text(), name
