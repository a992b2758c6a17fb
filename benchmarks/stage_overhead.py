"""What every stage pays before and after its notebook's work: two costs `unseen-stage` avoids, each against the plain way.

    python benchmarks/stage_overhead.py [--log runs/train/standard-s0/log.csv] [--repeats 5]

A smoke-profile stage does a second of work inside some ten seconds of starting DVC, papermill and a kernel,
so these add up over the pipeline's 52 stages. Each pair takes turns in one process, and the ratio is printed:

    papermill import   `import papermill` in a fresh interpreter, as `unseen-stage` does it (jsonschema's
                       optional IRI checker, `rfc3987_syntax`, left out) against the plain import, which
                       compiles that checker's grammar
    figure shown       a run's training figure written as PNG and shown in the notebook, as the train stage
                       does it (closed, the notebook shows the file) against savefig and then the inline
                       backend's own drawing of the figure left open

and, for scale, what DVC pays after every stage to rewrite dvc.lock (`--lock`, default dvc.lock): a
round-trip parse and a dump of the whole file, growing with every stage the lock records.
"""
import argparse, io, subprocess, sys, tempfile, time
from pathlib import Path

PLAIN = "import papermill"
SKIPPED = "import sys; sys.modules.setdefault('rfc3987_syntax', None); import papermill"


def timed(fn, repeats: int) -> list:
    "Seconds of each of `repeats` calls of `fn`."
    out = []
    for _ in range(repeats):
        start = time.perf_counter(); fn(); out.append(time.perf_counter() - start)
    return out


def alternate(pairs: dict, repeats: int) -> dict:
    "Each of `pairs`' functions timed `repeats` times, taking turns; name -> the median."
    times = {name: [] for name in pairs}
    for _ in range(repeats):
        for name, fn in pairs.items(): times[name] += timed(fn, 1)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


def show(title: str, medians: dict):
    "Print the two medians of `medians` (the reference first) and the reference over the other."
    (ref, r), (new, n) = medians.items()
    print(f"{title}:\n  {ref:38s} {1e3 * r:7.0f} ms\n  {new:38s} {1e3 * n:7.0f} ms   {r / n:.2f}x as fast")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", default="runs/train/standard-s0/log.csv", help="a training run's log.csv (in git)")
    ap.add_argument("--lock", default="dvc.lock")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    py = lambda code: subprocess.run([sys.executable, "-c", code], check=True)
    show("papermill import (a fresh interpreter each)",
         alternate({"plain": lambda: py(PLAIN), "IRI checker left out (unseen-stage)": lambda: py(SKIPPED)}, args.repeats))

    import matplotlib; matplotlib.use("agg")
    import pandas as pd
    from IPython.core.pylabtools import print_figure
    from IPython.display import Image
    from unseen.experiments import plot_training
    log = pd.read_csv(args.log)
    with tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "training.png"
        def inline():   # savefig, and the inline backend draws the figure left open again
            fig = plot_training(log); fig.savefig(png, dpi=110); print_figure(fig, "png", bbox_inches="tight")
            matplotlib.pyplot.close(fig)
        def once():     # the train stage: savefig, close, show the file
            fig = plot_training(log); fig.savefig(png, dpi=110); matplotlib.pyplot.close(fig)
            Image(filename=str(png))
        show(f"training figure of {args.log}, written and shown",
             alternate({"savefig, then drawn inline": inline, "drawn once, the file shown": once}, args.repeats))

    from dvc.utils.serialize._yaml import parse_yaml_for_update
    from ruamel.yaml import YAML
    text = Path(args.lock).read_text()
    def rewrite(): YAML().dump(parse_yaml_for_update(text, args.lock), io.StringIO())
    t = sorted(timed(rewrite, args.repeats))[args.repeats // 2]
    print(f"DVC's rewrite of {args.lock} after a stage ({len(text.splitlines()):,} lines): {1e3 * t:.0f} ms (round-trip parse and dump)")


if __name__ == "__main__": main()
