"""What every stage pays before and after its notebook's work: three costs `unseen-stage` avoids, each against the plain way.

    python benchmarks/stage_overhead.py [--log runs/train/standard-s0/log.csv] [--repeats 5]

A smoke-profile stage does a second of work inside some ten seconds of starting DVC, papermill and a kernel,
so these add up over the pipeline's 52 stages. Each pair takes turns in one process, and the ratio is printed:

    papermill import   `import papermill` in a fresh interpreter, as `unseen-stage` does it (jsonschema's
                       optional IRI checker, `rfc3987_syntax`, left out) against the plain import, which
                       compiles that checker's grammar
    figure shown       a run's training figure written as PNG and shown in the notebook, as the train stage
                       does it (closed, the notebook shows the file) against savefig and then the inline
                       backend's own drawing of the figure left open
    kernel exit        a kernel that imported torch and built an AdamW optimiser (which imports torch's
                       compiler), as a train stage does, asked to shut down: started with
                       `unseen.pipeline.KERNEL_ARGUMENTS` (the cycle collector frozen at exit) against a
                       plain kernel

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


def median(times: list) -> float: return sorted(times)[len(times) // 2]


def alternate(pairs: dict, repeats: int, self_timed: bool = False) -> dict:
    "Each of `pairs`' functions run `repeats` times, taking turns, timed (or, `self_timed`, returning its seconds); name -> the median."
    times = {name: [] for name in pairs}
    for _ in range(repeats):
        for name, fn in pairs.items(): times[name] += [fn()] if self_timed else timed(fn, 1)
    return {name: median(t) for name, t in times.items()}


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

    from jupyter_client.manager import KernelManager
    from unseen.pipeline import KERNEL_ARGUMENTS
    def kernel_exit(arguments):   # the seconds from asking the kernel to shut down to its process gone
        km = KernelManager(kernel_name="python3"); km.start_kernel(extra_arguments=arguments)
        kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=60)
        kc.execute_interactive("import torch; torch.optim.AdamW(torch.nn.Linear(4, 4).parameters());", timeout=120)
        kc.stop_channels(); start = time.perf_counter(); km.shutdown_kernel(); return time.perf_counter() - start
    show("kernel exit with torch and its compiler loaded",
         alternate({"plain kernel": lambda: kernel_exit([]),
                    "frozen at exit (unseen-stage)": lambda: kernel_exit(KERNEL_ARGUMENTS)}, args.repeats, self_timed=True))

    from dvc.utils.serialize._yaml import parse_yaml_for_update
    from ruamel.yaml import YAML
    text = Path(args.lock).read_text()
    def rewrite(): YAML().dump(parse_yaml_for_update(text, args.lock), io.StringIO())
    t = median(timed(rewrite, args.repeats))
    print(f"DVC's rewrite of {args.lock} after a stage ({len(text.splitlines()):,} lines): {1e3 * t:.0f} ms (round-trip parse and dump)")


if __name__ == "__main__": main()
