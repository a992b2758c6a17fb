#!/usr/bin/env bash
# Every GPU check of this project in one command (a lent GPU's time is short): the CUDA numbers of the
# training and decoding benchmarks, then a short paper-scale run of the real stage notebooks, then
# decoding with the model it trained. Needs PyTorch and transformers; no Jupyter, no DVC.
#     OUT=runs/gpu bash benchmarks/gpu_check.sh      # results: $OUT/{gpu,bench,smoke}.txt, smoke.json, stderr.txt
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TQDM_MININTERVAL=20 HF_HUB_OFFLINE=1 MPLBACKEND=Agg TOKENIZERS_PARALLELISM=false
OUT=${OUT:-runs/gpu}; mkdir -p "$OUT"
SMOKE_STEPS=${SMOKE_STEPS:-2500}   # 3 runs at ~35 ms/step on an H200 (benchmarks/results/gpu-h200-2026-11-29), plus evaluation: ~5 min
run() { echo "## $*"; timeout "$1" python3 "${@:2}" 2>>"$OUT/stderr.txt" || echo "(exit $?)"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; } | tee "$OUT/gpu.txt"
{ run 90 benchmarks/train_step.py --device cuda --steps 50                                      # the CPU pipeline's model
  run 90 benchmarks/train_step.py --device cuda --steps 50 --dtype bfloat16 --batch 256
  run 120 benchmarks/train_step.py --device cuda --steps 30 --dtype bfloat16 --d-model 768 --layers 10 --heads 12 --batch 256
  run 120 benchmarks/train_step.py --device cuda --steps 30 --dtype bfloat16 --d-model 768 --layers 10 --heads 12 --batch 256 --targets 1
} | tee "$OUT/bench.txt"
run 400 benchmarks/paper_smoke.py --steps "$SMOKE_STEPS" --runs standard freeze copy --out runs/smoke | tee "$OUT/smoke.txt"
cp runs/smoke/smoke.json "$OUT/" 2>/dev/null
data=runs/smoke/data/n1000/test_s1.safetensors
{ run 60 benchmarks/decode.py --device cuda --data $data --params params.yaml
  run 60 benchmarks/decode.py --device cuda --data $data --params params-paper.yaml
  run 60 benchmarks/decode.py --device cuda --data $data --model runs/smoke/smoke-standard-s0/model.safetensors
} | tee -a "$OUT/bench.txt"
tail -c 3000 "$OUT/stderr.txt"
