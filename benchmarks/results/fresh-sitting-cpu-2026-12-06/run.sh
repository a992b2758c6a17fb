#!/usr/bin/env bash
# One sitting of the whole default pipeline from a fresh clone, on an otherwise idle machine, stopped after
# MINUTES if it has not finished (a working session here lasts three hours, the pipeline about seven):
#     bash run.sh MINUTES [CLONE_DIR]      (default: a new temporary folder; an existing, non-empty CLONE_DIR is refused)
# Writes beside itself: install.txt (the install's seconds), repro.log (`unseen-repro -j 2` as a user runs it),
# outputs.txt (every git-tracked output the sitting rewrote that differs from the committed one; nothing listed:
# every finished stage wrote its outputs byte for byte as committed). Then, by hand: `python compare_finetune.py CLONE`
# (finetune-runs.txt) and `python project.py CLONE` (projection.txt).
set -u
minutes=${1:?give the length of the sitting in minutes}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
here=$(cd "$(dirname "$0")" && pwd)
d=${2:-$(mktemp -d)}
[ -e "$d" ] && [ -n "$(ls -A "$d")" ] && { echo "run.sh: $d exists and is not empty: give a new folder" >&2; exit 1; }
git clone -q "$repo" "$d" && cd "$d"
t0=$(date +%s)
python3.11 -m venv .venv && .venv/bin/pip install -q -e ".[dev,gemma]" > "$d/install.log" 2>&1
rc=$?; echo "install: $(( $(date +%s) - t0 )) s (rc $rc)" > "$here/install.txt"
export HF_HUB_OFFLINE=1
. .venv/bin/activate
dvc config core.analytics false 2>/dev/null
t0=$(date +%s)
# its own process group, so that the stop reaches every stage it started (dvc, papermill, the kernels, the workers)
setsid unseen-repro -j 2 --no-progress > "$here/repro.log" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt $(( minutes * 60 )) ]; do sleep 10; done
if kill -0 $pid 2>/dev/null; then
  kill -INT -- -$pid; sleep 30; kill -TERM -- -$pid 2>/dev/null
  echo "stopped after $minutes minutes: wall $(( $(date +%s) - t0 )) s" >> "$here/repro.log"
else
  wait $pid; echo "rc $? wall $(( $(date +%s) - t0 )) s" >> "$here/repro.log"
fi
{ echo "# git status of the clone after the sitting (modified: a tracked output that differs from the committed one)"
  git status --short --untracked-files=no; } > "$here/outputs.txt"
echo "clone: $d"
