"The committed result tables are what the results stage's code makes of the committed evaluations."
import pytest
import yaml

from pipeline_helpers import ROOT
from unseen.results import collect, write_comparisons, write_results

PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())


def test_every_committed_run_of_the_matrix_is_evaluated_with_its_seeds_and_redrawn():
    more = PARAMS["matrix"]["more"]
    every = collect(ROOT / "runs/eval")
    seeds = every.groupby("run")["seed"].apply(set)
    for run in more["experiments"]:   # the results table's rows and the full recipe's part: five seeds
        assert seeds[run] == set(PARAMS["matrix"]["seeds"] + more["seeds"]), run
    controls = {c for cs in PARAMS["results"]["controls"].values() for c in cs}
    for run in controls | set(PARAMS["results"]["length"]):   # every control, evaluated and re-drawn
        assert len(seeds[run]) >= 3, run
        rows = every[(every["run"] == run) & every["scenario"].isin(["s2", "s3"])]
        assert len(rows) and rows["redrawn_exact_match"].notna().all(), run


@pytest.mark.slow   # seconds on a free core, minutes beside other work: the comparisons' intervals over every pair of runs
def test_the_committed_tables_recompute_from_the_committed_evaluations(tmp_path):
    p = PARAMS["results"]
    every = collect(ROOT / "runs/eval")
    runs = every[every["run"].isin(p["experiments"])]
    assert len(runs) >= 3 * len(p["experiments"])   # every row of the table has its seeds
    write_results(runs, p["experiments"], tmp_path)
    write_comparisons(every, p["controls"], p["parts"], p["sweep"], tmp_path, length=p["length"])
    for name in ["table.md", "comparisons.md"]:
        assert (tmp_path / name).read_text() == (ROOT / "runs/results" / name).read_text(), name
