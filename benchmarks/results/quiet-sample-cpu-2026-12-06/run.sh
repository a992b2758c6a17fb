#!/usr/bin/env bash
# A fresh clone of this repository retrains four of the committed runs, two at a time, on an otherwise idle
# machine: its stage times beside the same stages' times in the five-seed run, its outputs against git.
#     bash run.sh [CLONE_DIR]      (default: a new temporary folder; an existing CLONE_DIR is refused)
set -u
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
here=$(cd "$(dirname "$0")" && pwd)
d=${1:-$(mktemp -d)}
[ -e "$d" ] && [ -n "$(ls -A "$d")" ] && { echo "run.sh: $d exists and is not empty: give a new folder" >&2; exit 1; }
git clone -q "$repo" "$d" && cd "$d"
python3.11 -m venv .venv && .venv/bin/pip install -q -e ".[dev,gemma]" > "$d/install.log" 2>&1
export HF_HUB_OFFLINE=1
. .venv/bin/activate
dvc config core.analytics false 2>/dev/null
t0=$(date +%s)
unseen-repro -j 2 --no-progress train@standard-0 train@copy-1 train@freeze-0 train@reset_names-0 > "$here/repro.log" 2>&1
echo "rc $? wall $(( $(date +%s) - t0 )) s" >> "$here/repro.log"
git status --short > "$here/outputs.txt"
for r in standard-s0 copy-s1 freeze-s0 reset_names-s0; do
  for f in log.csv metrics.json; do
    cmp -s "runs/train/$r/$f" "$repo/runs/train/$r/$f" && echo "$r $f same" || echo "$r $f DIFF"
  done
done >> "$here/outputs.txt"
echo "clone: $d (eager.sh $d retrains the same four without torch.compile)"
