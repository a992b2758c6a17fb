cd /tmp/calib && . .venv/bin/activate && export HF_HUB_OFFLINE=1
one() { local r=$1 s=$2; local t0=$(date +%s)
  unseen-stage train -p run=$r -p seed=$s -p training.compile=false -p out_dir=runs/eager-check/$r-s$s -p weights_dir=runs/eager-check/models --tag eager-$r-s$s > /tmp/eager-$r-$s.log 2>&1
  echo "$r-s$s rc $? $(( $(date +%s) - t0 )) s steps $(python -c "import json;print(json.load(open('runs/eager-check/$r-s$s/metrics.json'))['step'])" 2>/dev/null)" >> /tmp/eager.txt; }
rm -f /tmp/eager.txt
( one standard 0; one freeze 0 ) &
( one copy 1; one reset_names 0 ) &
wait
echo finished >> /tmp/eager.txt
