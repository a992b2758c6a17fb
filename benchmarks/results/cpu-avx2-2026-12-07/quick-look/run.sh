#!/usr/bin/env bash
# The quick look in float32 from a fresh clone of this repository, as it ran here:
#   bash run.sh CLONE_DIR VENV
# CLONE_DIR: a new folder (the clone; the look's copy goes to CLONE_DIR-look, its log to CLONE_DIR.log).
# VENV: a virtual environment with this project's dependencies installed (`pip install -e ".[dev,gemma]"`): the
# clone's own code comes first on PYTHONPATH, so the install is not timed. Inductor's cache starts empty.
set -euo pipefail
clone=$1; venv=$2
[ ! -e "$clone" ] || { echo "$clone exists: name a new folder"; exit 1; }
git clone -q "$(git rev-parse --show-toplevel)" "$clone"
cd "$clone"
git log -1 --format=%h
export PATH=$venv/bin:$PATH PYTHONPATH=$clone TORCHINDUCTOR_CACHE_DIR=$clone-inductor
start=$(date +%s)
unseen-repro --profile quick --dtype float32 --dir "$clone-look" -j 2 --progress-every 60 > "$clone.log" 2>&1 || echo "rc $?"
echo "wall $(( $(date +%s) - start )) s"
