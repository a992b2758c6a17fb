#!/usr/bin/env python
"""The library notebooks (nbs/NN_*.ipynb) keep their outputs, so that a reader on GitHub sees what each lesson computes.

    nice -n 19 python tools/render_notebooks.py                  # re-execute every library notebook in place, then nbdev-clean
    nice -n 19 python tools/render_notebooks.py 00_logic 06_lemma  # some of them
    python tools/render_notebooks.py --check                     # what CI checks: no error outputs, small, stages without outputs

Each notebook runs top to bottom as `nbdev-test` runs it (from nbs/, its lesson cells asserting), with progress bars off;
a notebook whose cell fails is left as it was. Stage notebooks (nbs/stages/) are not rendered: their executed copies
are pipeline outputs under runs/notebooks/.
"""
import argparse, json, os, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
MAX_BYTES = 2_000_000   # a library notebook with its outputs; more means an output that does not belong in git


def library(names=()) -> list:
    "The library notebooks, all or those named (with or without `.ipynb`)."
    every = sorted(NBS.glob("[0-9]*.ipynb"))
    if not names: return every
    chosen = [NBS / (n if n.endswith(".ipynb") else n + ".ipynb") for n in names]
    unknown = [p.name for p in chosen if p not in every]
    if unknown: sys.exit(f"render_notebooks: not a library notebook: {', '.join(unknown)} (they are {', '.join(p.stem for p in every)})")
    return chosen


def render(paths) -> list:
    "Re-execute each notebook in place and clean it; return the names of those that failed."
    os.environ.setdefault("TQDM_DISABLE", "1")       # no progress bars in the saved outputs
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from nbdev.test import test_nb
    failed = []
    for path in paths:
        start = time.monotonic()
        os.chdir(NBS)
        ok, _ = test_nb(path, save=True, do_print=False)
        print(f"{path.name}: {'rendered' if ok else 'FAILED (left as it was)'} in {time.monotonic() - start:.0f} s", flush=True)
        if not ok: failed.append(path.name)
    from nbdev.clean import nbdev_clean
    os.chdir(ROOT)
    for path in paths: nbdev_clean(fname=str(path))   # what CI's gate checks: nbdev-clean then leaves them unchanged
    return failed


def problems(path: Path, stage: bool) -> list:
    "What is wrong with a notebook in git: error outputs; for a stage notebook, any output; for a library one, its size."
    nb = json.loads(path.read_text())
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                out.append(f"{path.relative_to(ROOT)}: cell {cell.get('id')} holds an error output ({o.get('ename')}: {o.get('evalue', '')[:80]})")
        if stage and cell.get("outputs"):
            out.append(f"{path.relative_to(ROOT)}: cell {cell.get('id')} has outputs (stage notebooks in git carry none)")
    if not stage and path.stat().st_size > MAX_BYTES:
        out.append(f"{path.relative_to(ROOT)}: {path.stat().st_size:,} bytes with its outputs (at most {MAX_BYTES:,})")
    return out


def check() -> list:
    "Every problem of every notebook in git."
    return ([p for nb in library() for p in problems(nb, stage=False)]
            + [p for nb in sorted((NBS / "stages").glob("*.ipynb")) for p in problems(nb, stage=True)])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="library notebooks to render (default: all)")
    ap.add_argument("--check", action="store_true", help="render nothing; exit 1 if a notebook holds an error output")
    args = ap.parse_args(argv)
    if args.check:
        found = check()
        print("\n".join(found) if found else f"notebooks: no error outputs ({len(library())} library notebooks, stage notebooks clean)")
        return 1 if found else 0
    failed = render(library(args.names))
    if failed: print(f"failed: {', '.join(failed)}: run `nbdev-test --path-glob '*NAME*'` to see which cell")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
