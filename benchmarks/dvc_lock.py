"""What DVC pays to read dvc.lock: ruamel.yaml's C parser (ruamel.yaml.clib, a dependency) against its pure-Python one.

    python benchmarks/dvc_lock.py [--lock dvc.lock] [--repeats 5]

Every `dvc` command parses dvc.yaml and dvc.lock, and `unseen-repro` starts one `dvc repro --single-item` per
stage; the lock of the default pipeline lists every stage's dependencies, parameters and outputs (about
0.4 MB). This parses the lock as DVC does (`YAML(typ="safe")`), both ways alternately in one process, and
prints the ratio.
"""
import argparse, time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lock", default="dvc.lock")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from ruamel.yaml import YAML
    text = Path(args.lock).read_text()
    try:
        import _ruamel_yaml  # noqa: F401  (ruamel.yaml.clib: without it YAML(typ="safe") falls back to pure Python)
    except ImportError:
        raise SystemExit("ruamel.yaml.clib is not installed: pip install -e . installs it")
    parsers = {"pure Python": YAML(typ="safe", pure=True), "C (ruamel.yaml.clib)": YAML(typ="safe")}
    elapsed, loaded = dict.fromkeys(parsers, 0.0), {}
    for _ in range(args.repeats):
        for name, parser in parsers.items():
            t = time.perf_counter(); loaded[name] = parser.load(text); elapsed[name] += time.perf_counter() - t
    assert loaded["pure Python"] == loaded["C (ruamel.yaml.clib)"], "the two parsers read the lock differently"
    print(f"{args.lock}: {len(text) / 1e6:.2f} MB, {len(loaded['pure Python'].get('stages', {}))} stages, {args.repeats} parses each")
    for name, s in elapsed.items(): print(f"  {name:22s} {1e3 * s / args.repeats:8.0f} ms a parse")
    print(f"  C parser: {elapsed['pure Python'] / elapsed['C (ruamel.yaml.clib)']:.1f}x as fast")


if __name__ == "__main__": main()
