#!/usr/bin/env bash
# The four runs of run.sh again with `training.compile=false`, two at a time, in the clone run.sh made;
# each stage's wall seconds and steps go to eager.txt beside this script, its log under the clone's runs/logs.
#     bash eager.sh CLONE_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "${1:?give the clone run.sh made}" && . .venv/bin/activate && export HF_HUB_OFFLINE=1
out="$here/eager.txt"; : > "$out"
one() { local r=$1 s=$2; local t0=$(date +%s)
  unseen-stage train -p run=$r -p seed=$s -p training.compile=false -p out_dir=runs/eager-check/$r-s$s \
    -p weights_dir=runs/eager-check/models --tag eager-$r-s$s > runs/logs/eager-$r-s$s.log 2>&1
  echo "$r-s$s rc $? $(( $(date +%s) - t0 )) s steps $(python -c "import json;print(json.load(open('runs/eager-check/$r-s$s/metrics.json'))['step'])" 2>/dev/null)" >> "$out"; }
( one standard 0; one freeze 0 ) &
( one copy 1; one reset_names 0 ) &
wait
echo finished >> "$out"
