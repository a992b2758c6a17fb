"""`unseen-repro`: independent DVC stages two at a time, in a tiny throwaway git + DVC repository."""
import json, os, subprocess, sys, threading, time
from itertools import combinations
from pathlib import Path

import pytest
import yaml

import unseen.repro as repro_module
from unseen.repro import main, pipeline_dag, repro_stage

DVC = [sys.executable, "-m", "dvc"]
ENV = {**os.environ, "DVC_NO_ANALYTICS": "1"}
# every command writes "START END" (seconds since the epoch) into its output
STAMP = 's=$(date +%s.%N); {work}; echo "$s $(date +%s.%N)" > {out}'

# A command that marks its start in meet/ and waits (60 s at most) until some other command has started too: when
# two run at once they overlap whatever DVC's start-up costs on a busy machine, and when they never do, none overlaps.
MEET = ("mkdir -p meet && touch meet/{name} && for i in $(seq 600); do [ $(ls meet | wc -l) -ge 2 ] && break; "
        "sleep 0.1; done; sleep 0.2")


def _pipeline(work: str = "sleep 1") -> dict:
    "Prep, four trainings after it, their aggregate, and an independent stage; the five run `work`, `{name}` their output's."
    return {"stages": {
        "prep": {"cmd": STAMP.format(work="mkdir -p out", out="out/prep"), "outs": ["out/prep"]},
        "train": {"matrix": {"v": ["a", "b"], "s": [0, 1]},
                  "cmd": STAMP.format(work=work.format(name="t-${item.v}-${item.s}"), out="out/t-${item.v}-${item.s}"),
                  "deps": ["out/prep"], "outs": ["out/t-${item.v}-${item.s}"]},
        "agg": {"cmd": STAMP.format(work="cat out/t-* > /dev/null", out="out/agg"),
                "deps": [f"out/t-{v}-{s}" for v in "ab" for s in (0, 1)], "outs": ["out/agg"]},
        "solo": {"cmd": STAMP.format(work=work.format(name="solo"), out="solo.txt"), "outs": ["solo.txt"]},
    }}


PIPELINE = _pipeline()
STAGES = {"prep", "train@a-0", "train@a-1", "train@b-0", "train@b-1", "agg", "solo"}


def _repo(root: Path, pipeline: dict) -> Path:
    "A git repository with DVC initialised and `pipeline` as its committed dvc.yaml."
    run = lambda *cmd: subprocess.run(cmd, cwd=root, env=ENV, check=True, capture_output=True)
    run("git", "init", "-q")
    run(*DVC, "init", "-q")
    run(*DVC, "config", "core.analytics", "false")
    (root / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    run("git", "add", "-A")
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pipeline")
    return root


def _span(path: Path) -> tuple:
    start, end = map(float, path.read_text().split())
    return start, end


def _status(root: Path) -> dict:
    r = subprocess.run([*DVC, "status", "--json"], cwd=root, env=ENV, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


@pytest.mark.slow
def test_two_stages_at_a_time_in_dependency_order(tmp_path, monkeypatch, capsys):
    root = _repo(tmp_path, _pipeline(MEET))
    dag = pipeline_dag(root)
    assert set(dag) == STAGES and set(dag["agg"]) == STAGES - {"prep", "agg", "solo"} and dag["train@b-1"] == ["prep"]
    monkeypatch.chdir(root)
    start = time.monotonic()
    main(["-j", "2", "--no-progress"])
    first = time.monotonic() - start
    out = capsys.readouterr().out
    assert "7 of 7 stages to run" in out and "dvc status: pipeline is up to date." in out, out
    assert all(f"done   {name} in" in out for name in STAGES), out

    assert _status(root) == {}
    assert set(yaml.safe_load((root / "dvc.lock").read_text())["stages"]) == STAGES  # every writer's entry kept
    ignored = (root / "out/.gitignore").read_text().split()
    assert {f"/t-{v}-{s}" for v in "ab" for s in (0, 1)} <= set(ignored)  # likewise out/.gitignore
    assert all((root / "runs/logs" / f"{name}.log").exists() for name in STAGES)
    assert "runs/" not in subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout

    spans = {"prep": _span(root / "out/prep"), "agg": _span(root / "out/agg"), "solo": _span(root / "solo.txt")}
    spans |= {f"train@{v}-{s}": _span(root / f"out/t-{v}-{s}") for v in "ab" for s in (0, 1)}
    for name in STAGES:  # no stage started before the stages it depends on had finished
        assert all(spans[up][1] <= spans[name][0] for up in dag[name]), (name, spans)
    overlaps = [(a, b) for a, b in combinations(spans, 2)
                if max(spans[a][0], spans[b][0]) < min(spans[a][1], spans[b][1])]
    assert overlaps, spans  # two commands ran at the same time...
    assert not any(max(spans[x][0] for x in t) < min(spans[x][1] for x in t)
                   for t in combinations(spans, 3)), spans  # ...and never three

    outputs = {p: p.stat().st_mtime_ns for p in (root / "out").iterdir()}
    start = time.monotonic()
    main(["--no-progress"])  # everything is up to date: nothing runs
    assert "Pipeline is up to date: nothing to run." in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in (root / "out").iterdir()} == outputs
    print(f"first run {first:.1f} s, second {time.monotonic() - start:.1f} s")


@pytest.mark.slow
def test_a_target_brings_only_its_upstream(tmp_path, monkeypatch, capsys):
    root = _repo(tmp_path, PIPELINE)
    monkeypatch.chdir(root)
    main(["train@b-1", "--no-progress"])
    assert "2 of 2 stages to run" in capsys.readouterr().out
    assert set(yaml.safe_load((root / "dvc.lock").read_text())["stages"]) == {"prep", "train@b-1"}
    assert not (root / "solo.txt").exists()


@pytest.mark.slow
def test_a_failed_stage_stops_the_run_and_is_named(tmp_path, monkeypatch, capsys):
    root = _repo(tmp_path, {"stages": {
        "bad": {"cmd": "echo oops; exit 3", "outs": ["bad.txt"]},
        "slow": {"cmd": "sleep 2; echo ok > slow.txt", "outs": ["slow.txt"]},
        "after": {"cmd": "cat bad.txt > after.txt", "deps": ["bad.txt"], "outs": ["after.txt"]},
        "later": {"cmd": "echo later > later.txt", "outs": ["later.txt"]},
    }})
    monkeypatch.chdir(root)
    with pytest.raises(SystemExit) as e:
        main(["-j", "2", "--no-progress"])
    message = str(e.value.code)
    assert "stage bad failed (log: runs/logs/bad.log)" in message and "oops" in message, message
    out = capsys.readouterr().out
    assert "FAILED bad" in out and "done   slow" in out, out  # the stage already running was let finish
    assert (root / "slow.txt").exists() and not (root / "after.txt").exists() and not (root / "later.txt").exists()
    stale = out.split("dvc status: not up to date: ")[1].split("\n")[0]
    assert set(stale.split(", ")) == {"bad", "after", "later"}, out


def test_a_lock_error_is_retried(tmp_path, monkeypatch):
    "A stand-in for dvc that fails on a lock twice, then succeeds."
    fake = tmp_path / "fake_dvc.py"
    fake.write_text("import pathlib, sys\n"
                    "n = pathlib.Path('attempts'); k = int(n.read_text()) + 1 if n.exists() else 1; n.write_text(str(k))\n"
                    "if k < 3: sys.exit(print('ERROR: Unable to acquire lock. Most likely another DVC process') or 255)\n"
                    "print('ran', sys.argv[1:])\n")
    monkeypatch.setattr(repro_module, "DVC", [sys.executable, str(fake)])
    r = repro_stage("train@a-0", tmp_path, retries=5, retry_wait=0.01)
    assert r.ok and r.attempts == 3, r
    log = r.log.read_text()
    assert log.count("failed on a DVC lock") == 2 and "ran ['repro', '--single-item', 'train@a-0']" in log
    (tmp_path / "attempts").unlink()
    r = repro_stage("train@a-0", tmp_path, retries=1, retry_wait=0.01)
    assert not r.ok and r.attempts == 2  # bounded
    fake.write_text("import sys; print('ERROR: failed to reproduce'); sys.exit(255)\n")
    r = repro_stage("x", tmp_path, retries=5, retry_wait=0.01)
    assert not r.ok and r.attempts == 1  # other failures are not retried


@pytest.mark.slow
def test_the_repository_lock_held_during_a_command_is_waited_for(tmp_path):
    "Without `--wait-for-lock`, DVC gives up after 3 s on re-taking its lock once the command ran."
    from dvc.lock import Lock
    root = _repo(tmp_path, {"stages": {"s": {"cmd": "touch started; sleep 1; echo s > s.txt", "outs": ["s.txt"]}}})
    def hold():
        while not (root / "started").exists(): time.sleep(0.05)
        lock = Lock(str(root / ".dvc/tmp/lock"))  # free: DVC lets it go while the command runs
        lock.lock()
        time.sleep(4.5)
        lock.unlock()
    holder = threading.Thread(target=hold)
    holder.start()
    r = repro_stage("s", root)
    holder.join()
    assert r.ok and r.attempts == 1, r.log.read_text()
    assert _status(root) == {}


def test_bfloat16_on_a_cpu_that_emulates_it_is_warned_before_anything_runs(tmp_path, monkeypatch, capsys):
    import unseen.config
    (tmp_path / "params-look.yaml").write_text("base: {device: cpu, dtype: bfloat16}\nfinetune: {training: {dtype: bfloat16}}\n")
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(repro_module, "repro_profile", lambda profile, dest, dtype=None, **kw: calls.append((profile, dtype)) or (dest, {}))
    for native, argv, warned in [(False, [], True), (True, [], False), (False, ["--dtype", "float32"], False),
                                 (False, ["--dtype", "bfloat16"], True)]:
        monkeypatch.setattr(unseen.config, "native_bf16", lambda device="cpu", native=native: native)
        main(["--profile", "look", *argv])
        out = capsys.readouterr().out
        assert ("base.dtype and finetune.training.dtype ask for bfloat16" in out) == warned, (native, argv, out)
        assert ("add --dtype float32 to --profile look" in out) == warned
    assert calls == [("look", None), ("look", None), ("look", "float32"), ("look", "bfloat16")]   # it runs all the same
