"""Stage notebooks run through papermill with their parameters, and the whole pipeline runs under DVC."""
import json
from pathlib import Path

import papermill as pm
import pytest
import yaml

from unseen.pipeline import declared_parameters, main, run_stage

from pipeline_helpers import BIN, ROOT, SMOKE, _copy_working_tree, _run, _smoke_params

STAGES = sorted(p.stem for p in (ROOT / "nbs" / "stages").glob("*.ipynb"))


def test_every_stage_notebook_has_a_parameters_cell():
    assert "generate" in STAGES
    for name in STAGES:
        assert declared_parameters(ROOT / "nbs" / "stages" / f"{name}.ipynb")


def test_every_stage_is_in_dvc_yaml_and_params_yaml():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for name in STAGES:
        assert name in stages and name in params, name


def test_a_parameter_reaches_the_generate_notebook(tmp_path):
    out = tmp_path / "executed.ipynb"
    pm.execute_notebook(str(ROOT / "nbs/stages/generate.ipynb"), str(out), kernel_name="python3", cwd=str(tmp_path),
                        parameters={"train_problems": 123, "test_problems": 11, "out_dir": str(tmp_path / "data")},
                        progress_bar=False)
    stats = json.loads((tmp_path / "data/n100/stats.json").read_text())
    assert stats["splits"]["train"]["problems"] == 123 and stats["splits"]["test_s2"]["problems"] == 11
    assert "train_problems = 123" in out.read_text()  # papermill's injected-parameters cell


def test_an_unknown_parameter_stops_the_stage(tmp_path, monkeypatch):
    _copy_working_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["generate"]["n_trian"] = 5
    Path("params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit, match="unknown parameter 'n_trian'"):
        main(["generate"])
    assert not Path("runs/notebooks/generate.ipynb").exists()


@pytest.mark.slow
def test_the_smoke_profile_regenerates_every_figure_in_a_copy(tmp_path):
    "`unseen-repro --profile smoke` (README): the whole pipeline at toy scale in a copy; this checkout is left as it is."
    before = {f: (ROOT / f).read_bytes() for f in ("params.yaml", "dvc.lock") if (ROOT / f).exists()}
    status = _run(["git", "status", "--porcelain", "--", "runs", "figures", "params.yaml", "dvc.lock"], ROOT).stdout
    copy = tmp_path / "smoke"
    r = _run([str(BIN / "unseen-repro"), "--profile", "smoke", "--dir", str(copy), "-j", "3", "--progress-every", "1"], ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"figures in {copy / 'figures'}" in r.stdout and "dvc status: pipeline is up to date." in r.stdout, r.stdout[-2000:]
    assert {f: (ROOT / f).read_bytes() for f in before} == before          # the user's params.yaml and dvc.lock untouched
    assert _run(["git", "status", "--porcelain", "--", "runs", "figures", "params.yaml", "dvc.lock"], ROOT).stdout == status
    assert (copy / "params.yaml").read_text() == (ROOT / "params-smoke.yaml").read_text()
    for n in (1000, 100, 300, 3000):
        stats = json.loads((copy / f"runs/data/n{n}/stats.json").read_text())
        assert stats["splits"]["train"]["problems"] == SMOKE["generate"]["train_problems"]
        assert stats["splits"]["train"]["distinct_names"] <= n
    assert (copy / "runs/notebooks/generate.ipynb").exists()
    experiments = SMOKE["train"]["experiments"]
    assert set(experiments) == set(yaml.safe_load((ROOT / "params.yaml").read_text())["train"]["experiments"])
    for run, spec in experiments.items():
        log = (copy / f"runs/train/{run}-s0/log.csv").read_text().splitlines()
        assert len(log) == 1 + 3 and log[-1].startswith("20,")  # header, steps 0, 10, 20
        details = json.loads((copy / f"runs/eval/{run}-s0/details.json").read_text())
        assert details["decoded"]["s3"]["problems"] == SMOKE["generate"]["test_problems"]
        assert (details["variant"], details["n_train"]) == (spec["variant"], spec.get("n_train", SMOKE["base"]["n_train"]))
        assert set(json.loads((copy / f"runs/eval/{run}-s0/metrics.json").read_text())) >= {"s1_exact_match", "s3_answer"}
    untied = (copy / "runs/train/standard-untied-s0/log.csv").read_text().splitlines()[0]
    assert "cos_unseen_embed" in untied   # an untied model logs its input rows too
    # progress: the training loop's latest line went to the stage's progress file, not into the executed notebook
    assert (copy / "runs/logs/train@standard-0.progress").read_text().startswith("train standard s0: 20/20 (100%)")
    executed = (copy / "runs/notebooks/train-standard-s0.ipynb").read_text()
    assert "train standard s0" not in executed and "it/s" not in executed
    table = (copy / "runs/results/table.md").read_text()
    assert "| copy_reset |" in table and "-n100" not in table and "untied" not in table
    summary = (copy / "runs/figures/summary.md").read_text()
    for claim in ("Claim 2, the collapse", "Claim 5", "Claim 4's resets, when they stop", "Claim 2's mechanism"):
        assert claim in summary
    declared = {p for stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].values()
                for p in [next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", []) + stage.get("plots", [])]
                if p.startswith("figures/")}
    assert len(declared) >= 27
    for path in declared:                   # every figure of dvc.yaml, in each of its formats
        assert (copy / path).stat().st_size > 0, path
    shown = _run([str(BIN / "dvc"), "metrics", "show", "--json"], copy)
    metrics = json.loads(shown.stdout)
    assert shown.returncode == 0 and list(metrics[""]["data"]) == ["runs/results/headline.json"], shown.stdout
    assert {"s1", "s3", "cos"} <= set(metrics[""]["data"]["runs/results/headline.json"]["data"]["standard"]), shown.stdout
    curves = (copy / "runs/figures/collapse_by_variant.csv").read_text().splitlines()
    assert curves[0].split(",")[:3] == ["step", "standard", "copy"] and len(curves) == 1 + 3
    status = _run([str(BIN / "dvc"), "status", "--json"], copy)
    assert json.loads(status.stdout) == {}, status.stdout


def test_bad_stage_inputs_give_one_clear_message(tmp_path, monkeypatch):
    _copy_working_tree(tmp_path)
    _smoke_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    main(["generate"])
    cases = [
        (["train", "-p", "run=forget"], "unknown experiment 'forget': train.experiments in params.yaml has"),
        (["train", "-p", "experiments={x: {variant: forget}}", "-p", "run=x"], "variant='forget': expected one of"),
        (["train", "-p", "run=standard", "-p", "model={d_model: 30, n_head: 4}"], "d_model=30 must be a multiple of n_head=4"),
        (["evaluate", "-p", "run=copy"], "no model weights at runs/models/copy-s0.safetensors"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as e:
            main(argv)
        first_line = str(e.value.code).splitlines()[0]
        assert message in first_line, first_line
