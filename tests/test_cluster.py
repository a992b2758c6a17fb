"""`unseen-cluster` for real: a Dask scheduler and workers as separate processes on loopback run the smoke
pipeline end to end in a throwaway copy; one worker dies, with every process it started, in the middle of a
training stage, and that stage runs again on another worker."""
import json, os, re, signal, subprocess, sys, time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("distributed")
import psutil  # a dependency of distributed

from pipeline_helpers import BIN, _copy_working_tree, _smoke_params

# the smoke profile with four experiments instead of every kind (tests/test_pipeline.py runs those): every stage
# still runs, the figures stage on these runs alone; about 4 minutes on two busy cores
EXPERIMENTS = {**{v: {"variant": v} for v in ("standard", "copy", "freeze")},
               "standard-untied": {"variant": "standard", "model": {"tied": False}}}
FIGURES = {"variants": ["standard", "copy", "freeze"], "untied": "standard-untied", "no_decay": "standard",
           "forgetting": {}, "sweep": [], "baseline": "standard"}

LIMIT = 20 * 60  # seconds: the whole smoke pipeline, beside whatever else this machine runs
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1", "DVC_NO_ANALYTICS": "1"}


def _start(cmd, log: Path, cwd: Path) -> subprocess.Popen:
    "`cmd` at the lowest priority, in its own session (so that it and its children can be ended by its id), output to `log`."
    with open(log, "w") as f:
        return subprocess.Popen(["nice", "-n", "19", *cmd], cwd=cwd, env=ENV, stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _worker(name: str, scheduler_file: Path, tmp: Path) -> subprocess.Popen:
    "A `dask worker` (its nanny and the worker process) with one thread, named `name`."
    return _start([str(BIN / "dask"), "worker", "--scheduler-file", str(scheduler_file), "--name", name,
                   "--nthreads", "1", "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard",
                   "--memory-limit", "0", "--death-timeout", "60", "--local-directory", str(tmp / name)],
                  tmp / f"{name}.log", tmp)


def _tree(proc) -> list:
    "`proc` and every process under it."
    try:
        top = psutil.Process(proc.pid)
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess: return []


def _running_stage(worker) -> str | None:
    "The stage whose command a process under `worker` is running now (`dvc repro --single-item NAME` with an `unseen-stage` below it)."
    try: cmds = [p.cmdline() for p in _tree(worker)]
    except psutil.Error: return None
    if not any("unseen-stage" in " ".join(c) for c in cmds): return None
    names = [c[c.index("--single-item") + 1] for c in cmds if "--single-item" in c]
    return names[0] if names else None


def _kill_tree(proc) -> list:
    "SIGKILL `proc` and everything under it at once, as when its machine goes (stopped first, so none escapes); the pids."
    for _ in range(3):  # stop the tree top down until no new child appears
        procs = _tree(proc)
        for p in procs:
            try: p.suspend()
            except psutil.Error: pass
    procs = _tree(proc)
    for p in procs:
        try: p.kill()
        except psutil.Error: pass
    psutil.wait_procs(procs, timeout=10)
    proc.wait(timeout=10)
    return [p.pid for p in procs]


def _gone(pid: int) -> bool:
    try: return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess: return True


@pytest.mark.slow
def test_the_smoke_pipeline_on_a_local_cluster_survives_a_killed_worker(tmp_path):
    root, tmp = tmp_path / "repo", tmp_path / "cluster"
    root.mkdir(); tmp.mkdir()
    _copy_working_tree(root)
    _smoke_params(root, extra={"train": {"experiments": EXPERIMENTS}, "figures": FIGURES})
    scheduler_file = tmp / "scheduler.json"
    started = [_start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                       "--scheduler-file", str(scheduler_file)], tmp / "scheduler.log", tmp)]
    try:
        for _ in range(600):
            if scheduler_file.exists() and json.loads(scheduler_file.read_text() or "{}").get("address"): break
            time.sleep(0.1)
        else: pytest.fail("the scheduler did not start: " + (tmp / "scheduler.log").read_text())
        workers = {name: _worker(name, scheduler_file, tmp) for name in ("w1", "w2")}
        started += list(workers.values())
        client_log = tmp / "client.log"
        client = _start([str(BIN / "unseen-cluster"), "--scheduler-file", str(scheduler_file), "--no-progress"], client_log, root)
        started.append(client)

        killed, deadline = None, time.monotonic() + LIMIT
        while client.poll() is None and time.monotonic() < deadline:
            for name, worker in workers.items():  # the first worker seen running a training stage dies
                stage = _running_stage(worker) if killed is None else None
                if stage and stage.startswith("train@"):
                    killed, victim, pids = stage, name, _kill_tree(worker)
                    started.append(_worker("w3", scheduler_file, tmp))  # a replacement joins, as a batch system would send one
            time.sleep(0.5)
        if client.poll() is None: pytest.fail(f"unseen-cluster still running after {LIMIT} s:\n" + client_log.read_text()[-3000:])
        out = client_log.read_text()
        assert client.returncode == 0, out[-4000:]
        assert killed, "no worker was seen running a training stage: nothing was killed\n" + out[-3000:]
        assert all(_gone(pid) for pid in pids), [p for p in pids if not _gone(p)]  # no orphan of the killed worker ran on

        # the stage that was running on the killed worker finished on another one
        where = re.search(rf"done   {re.escape(killed)} in \S+ \([^)]*\bon (w\d)\b[^)]*\)", out)   # e.g. (on w2, 2 attempts)
        assert where and where.group(1) != victim, (killed, victim, out[-4000:])
        # nothing lost: every stage of the pipeline ran once to the end, is in dvc.lock, and DVC sees it up to date
        from unseen.repro import pipeline_dag
        stages = set(pipeline_dag(root))
        assert f"{len(stages)} of {len(stages)} stages to run" in out and "0 failed, 0 not started" in out, out[-4000:]
        assert all(f"done   {name} in" in out for name in stages), sorted(n for n in stages if f"done   {n} in" not in out)
        lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
        assert set(lock) == stages
        status = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=root, env=ENV, capture_output=True, text=True)
        assert status.returncode == 0 and json.loads(status.stdout) == {}, status.stdout + status.stderr
        outs = [o["path"] for o in lock[killed]["outs"]]
        assert outs and all((root / o).exists() for o in outs), outs  # the killed stage's outputs, written by its rerun
        print(f"killed {victim} while it ran {killed}; it ran again on {where.group(1)}")
        print(out[-1500:])
    finally:
        for proc in reversed(started):  # the processes this test started, by their session id
            if proc.poll() is None:
                try: os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError: pass
        for proc in started:
            try: proc.wait(timeout=20)
            except subprocess.TimeoutExpired: os.killpg(proc.pid, signal.SIGKILL)
