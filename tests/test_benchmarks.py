"""The GPU check's paper-scale smoke (benchmarks/paper_smoke.py) runs the stages' library calls without Jupyter: here on the CPU at smoke size."""
import json, os, subprocess, sys

import yaml

from pipeline_helpers import ROOT, _smoke_params


def test_paper_smoke_runs_the_stages_library_calls_with_the_paper_parameters(tmp_path):
    # paper-scale keys, smoke-scale sizes, on the CPU
    _smoke_params(tmp_path, source=ROOT / "params-paper.yaml", extra={"base": {"device": "cpu", "dtype": "float32"}})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "paper_smoke.py"), "--params", "params.yaml", "--steps", "8",
                        "--runs", "standard", "freeze", "--out", "smoke"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads((tmp_path / "smoke" / "smoke.json").read_text())
    assert [row["run"] for row in rows] == ["standard", "freeze"]
    assert all(row["steps"] == 8 and 0 <= row["s2_exact"] <= 1 for row in rows)
    assert abs(rows[1]["cos_unseen_unembed"]) < 0.2                                # frozen rows keep their random init
    assert (tmp_path / "runs" / "checkpoints" / "smoke-freeze-s0").is_dir()        # the train stage's checkpoints, under the cwd
    assert "would take about" in r.stdout


def test_paper_smoke_times_runs_sharing_a_device_and_fine_tuning(tmp_path):
    "The GPU check's two timings, on the CPU with a tiny model: K runs at once, and full fine-tuning of the `tiny` shape."
    _smoke_params(tmp_path, source=ROOT / "params-paper.yaml", extra={
        "base": {"device": "cpu", "dtype": "float32"},
        "finetune": {"training": {"recipe": "full", "steps": 4, "batch_size": 2, "eval_every": 2, "dtype": "float32"}}})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    smoke = lambda *args: subprocess.run([sys.executable, str(ROOT / "benchmarks" / "paper_smoke.py"), "--params", "params.yaml",
                                          "--out", "out", *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    r = smoke("--share", "1", "2", "--share-steps", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    share = json.loads((tmp_path / "out" / "share.json").read_text())
    assert share["seq"] > 40 and [row["runs"] for row in share["rows"]] == [1, 2]  # the paper task's batches are longer
    assert share["rows"][0]["vs_one"] == 1 and all(len(row["step_ms"]) == row["runs"] for row in share["rows"])
    r = smoke("--finetune", "tiny", "--finetune-steps", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    row = json.loads((tmp_path / "out" / "finetune-tiny-params.json").read_text())
    assert row["steps"] == 2 and row["recipe"] == "full" and row["s_per_step"] > 0


def test_fresh_clone_report_reads_stage_times_steps_and_scores_beside_the_committed_run(tmp_path):
    "benchmarks/fresh_clone.py on a workspace holding one regenerated run (the committed standard seed 0, scores moved)."
    ws = tmp_path / "ws"
    for kind in ("train", "eval"):
        (ws / "runs" / kind / "standard-s0").mkdir(parents=True)
    train = json.loads((ROOT / "runs/train/standard-s0/metrics.json").read_text())
    evals = json.loads((ROOT / "runs/eval/standard-s0/metrics.json").read_text())
    (ws / "runs/train/standard-s0/metrics.json").write_text(json.dumps({**train, "step": 5000, "cycles": 1}))
    (ws / "runs/eval/standard-s0/metrics.json").write_text(json.dumps({**evals, "s1_exact_match": 0.95}))
    lock = (ROOT / "dvc.lock").read_text()
    data = next(o["md5"] for o in yaml.safe_load(lock)["stages"]["generate"]["outs"] if o["path"] == "runs/data")
    (ws / "dvc.lock").write_text(lock.replace(data, "0" * 32 + ".dir", 1))   # the regenerated datasets differ
    log = tmp_path / "repro.log"
    log.write_text("[09:00:00] start  generate (1/3)\n"                      # a first sitting, stopped mid-stage
                   "[10:00:00] start  generate (1/3)\n[10:00:31] done   generate in 30.8s\n"
                   "[10:04:41] done   train@standard-0 in 4m10s\n[10:04:55] done   evaluate@standard-0 in 13.2s\n")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fresh_clone.py"), str(ws), str(log), "--reference", str(ROOT),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "3 stages done" in r.stdout and "scenario 1 below 0.97: standard-s0" in r.stdout
    assert "generated data: differs" in r.stdout and "resumed after a stop: generate (" in r.stdout
    assert "1 train stages: 4 stage-minutes, 5,000 steps" in r.stdout                  # the resumed stage is not a train stage
    assert f"not done: {len(list((ROOT / 'runs/train').glob('*/metrics.json'))) - 1} train stages" in r.stdout
    stages = (tmp_path / "out" / "stages.csv").read_text().splitlines()
    assert stages[0].startswith("stage,finished,seconds,resumed") and stages[1].startswith("generate,10:00:31,31,True")
    assert f"train@standard-0,10:04:41,250,False,5000,1,50.0,{train['step']}," in stages[2]
    assert "| standard | 1 | 0.950 |" in (tmp_path / "out" / "variants.md").read_text()
    runs = (tmp_path / "out" / "runs.csv").read_text().splitlines()
    assert runs[1].startswith("standard-s0,") and ",0.95," in runs[1]
    assert (tmp_path / "out" / "runs.png").stat().st_size > 0


def test_dvc_reads_its_yaml_with_the_c_parser():
    "ruamel.yaml.clib is installed, so DVC's YAML(typ='safe') parses dvc.lock in C (benchmarks/dvc_lock.py: 3.6x)."
    from ruamel.yaml import YAML
    assert YAML(typ="safe").Parser.__name__ == "CParser"


def test_finetune_step_benchmark_times_the_step_and_each_evaluation_against_the_plain_one(tmp_path):
    "benchmarks/finetune_step.py on the tiny model: new/old ratios of the evaluations, and the same metrics from both."
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "finetune_step.py"), "--params", str(ROOT / "params-smoke.yaml"),
                        "--model", "tiny", "--steps", "2", "--problems", "16", "--repeat", "1", "--out", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    row = json.loads((tmp_path / "finetune-step.json").read_text())
    assert row["metrics_equal"] and row["new_over_old"]["reference"] == 1 and row["step_s"] > 0
    assert row["scored"]["chunks"] == 16 and row["scored"]["screened"] < 16    # untrained: no endpoint can cross, stopped early
    assert "new/old" in r.stdout


def test_finetune_cost_estimate_reads_the_committed_runs():
    "benchmarks/finetune_cost.py on runs/finetune/log.csv: the reserved names cost the most a seed; early-stopped evaluations read fewer problems."
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cost = lambda *a: subprocess.run([sys.executable, str(ROOT / "benchmarks" / "finetune_cost.py"), "--step-s", "1", "--eval-s", "8", *a],
                                     cwd=ROOT, env=env, capture_output=True, text=True)
    screened, plain = cost(), cost("--no-screen")
    assert screened.returncode == 0 and plain.returncode == 0, screened.stderr[-3000:] + plain.stderr[-3000:]
    table = lambda out: {line.split()[0]: [float(v) for v in line.split()[1:]] for line in out.splitlines()
                         if line.split() and line.split()[0] in ("unused", "adjectives", "letters")}
    s, p = table(screened.stdout), table(plain.stdout)
    assert s["unused"][5] > 2 * max(s["letters"][5], s["adjectives"][5])    # seconds per seed: the reserved names cost most
    assert all(s[c][3] < p[c][3] for c in s) and all(s[c][1] == p[c][1] for c in s)   # fewer problems read, the same steps
    assert "core-minutes" in screened.stdout


def test_pipeline_parts_sums_each_part_once_per_stage_over_sittings():
    "benchmarks/pipeline_parts.py: a stage stopped with its sitting counts once, its last attempt; parts follow params.yaml."
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import pipeline_parts as pp
    log = ("3 of 3 stages to run, 2 at a time; logs in runs/logs\n"
           "[10:00:00] start  train@freeze-0 (1/3)\n[10:00:00] start  train@freeze-n100-0 (2/3)\n"
           "[10:02:00] done   train@freeze-n100-0 in 2m00s\n[10:02:00] start  evaluate@freeze-n100-0 (3/3)\n"
           "[10:02:30] done   evaluate@freeze-n100-0 in 30.0s\n"
           "1 of 1 stages to run, 2 at a time; logs in runs/logs\n"
           "[23:59:00] start  train@freeze-0 (1/1)\n[00:04:00] done   train@freeze-0 in 5m00s\n")
    done, sittings = pp.read_log(log)
    assert done == {"train@freeze-n100-0": 120, "evaluate@freeze-n100-0": 30, "train@freeze-0": 300}
    assert sittings == [150, 300]   # the second sitting runs past midnight
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    got = pp.parts(done, params)
    assert got["results table (claims 1, 3, 4, 6)"] == [1, 300]
    assert got["diversity sweep (claim 5)"] == [1, 120] and got["evaluation"] == [1, 30]
