#!/usr/bin/env bash
# Every GPU check of this project in one command, sized for a lent GPU's 15 minutes: one call of at most
# 10 minutes (the per-step limits below add up to 600 s; about 6 min measured), the rest of the window for
# the machine's start. Needs PyTorch (CUDA) and transformers; no Jupyter, no DVC. Steps:
#   1. gpu.txt     the device and versions
#   2. bench.txt   training step of the 72M model on the CPU task's batches, each speed-up against the eager step (the reference at
#                  33-39 ms a pipeline step on an H200) and on the paper task's (9 layers, 12,110-row vocabulary,
#                  batches of ~99 tokens; benchmarks/train_step.py)
#   3. share.*     1, 2 and 4 paper-scale training runs at once on the one GPU: what --resources train:GPU=0.25
#                  of docs/cluster.md buys (benchmarks/paper_smoke.py --share)
#   4. smoke.*     the real stage notebooks (generate, train, evaluate) on params-paper.yaml's task and recipe,
#                  standard and freeze, SMOKE_STEPS steps each (benchmarks/paper_smoke.py)
#   5. finetune-*.json  fine-tuning steps of Gemma 3 shapes (random weights): 270M and 1B under params-paper.yaml's
#                  recipe (every weight, float32), and 270M under params.yaml's (the CPU stage's: body and task rows, bf16)
#     OUT=benchmarks/results/gpu-NAME bash benchmarks/gpu_check.sh      # default OUT: benchmarks/results/gpu-DATE
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TQDM_MININTERVAL=20 HF_HUB_OFFLINE=1 MPLBACKEND=Agg TOKENIZERS_PARALLELISM=false
OUT=${OUT:-benchmarks/results/gpu-$(date -u +%Y-%m-%d)}; mkdir -p "$OUT"
SMOKE_STEPS=${SMOKE_STEPS:-500}   # 2 runs at 82-106 ms a step (docs/paper-scale.md) + generate + evaluate: 175 s measured on an H200
PARAMS=${PARAMS:-params-paper.yaml}
start=$(date +%s)
run() { echo "## $*"; timeout "$1" python3 "${@:2}" 2>>"$OUT/stderr.txt" || echo "(exit $?)"; }
{ timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; } | tee "$OUT/gpu.txt"
paper_seq=$(python3 -c "from benchmarks.paper_smoke import padded_length; from unseen.pipeline import load_params
p = load_params('$PARAMS'); print(padded_length(p, p['train']['training']['batch_size']))" 2>>"$OUT/stderr.txt" || echo 99)
paper_vocab=$(python3 -c "from unseen.tokens import Vocab; from unseen.pipeline import load_params
p = load_params('$PARAMS'); print(len(Vocab(p['base']['n_train'], p['generate']['n_unseen'])))" 2>>"$OUT/stderr.txt" || echo 12110)
# one compiled variant, the pipeline's step (each compilation costs seconds of the window)
variants=("+ matmul" "+ packing" "+ fused" "+ pick")
{ run 60 benchmarks/train_step.py --device cuda --steps 30 --dtype bfloat16 --d-model 768 --layers 10 --heads 12 --head-dim 0 --batch 256 \
      --variants "${variants[@]}"
  run 75 benchmarks/train_step.py --device cuda --steps 30 --dtype bfloat16 --d-model 768 --layers 9 --heads 12 --head-dim 0 --batch 256 \
      --seq "$paper_seq" --vocab "$paper_vocab" --variants "${variants[@]}"
} | tee "$OUT/bench.txt"
run 100 benchmarks/paper_smoke.py --params "$PARAMS" --share 1 2 4 --share-steps 60 --out "$OUT" | tee "$OUT/share.txt"
run 220 benchmarks/paper_smoke.py --params "$PARAMS" --steps "$SMOKE_STEPS" --runs standard freeze --out runs/smoke | tee "$OUT/smoke.txt"
cp runs/smoke/smoke.json "$OUT/" 2>/dev/null
{ run 75 benchmarks/paper_smoke.py --params "$PARAMS" --finetune 270m 1b --finetune-steps 20 --out "$OUT"
  run 50 benchmarks/paper_smoke.py --params params.yaml --device cuda --finetune 270m --finetune-steps 40 --out "$OUT"
} | tee "$OUT/finetune.txt"
echo "gpu_check: $(( $(date +%s) - start )) s; results in $OUT" | tee -a "$OUT/gpu.txt"
tail -c 3000 "$OUT/stderr.txt"
