"""Why a copy head does not copy unseen names: its logit next to the main path's, at each target token.

    python tuning/copy_logits.py /tmp/unseen-tuning/pointer-copy [--data /tmp/unseen-tuning/data/n1000] [--problems 2]

For scenario 2 test problems (the query unseen), prints per target token: the target's logit from
the main path alone (the unembedding of the final residual) and with the copy head, the best
logit and its token, and how much of the copy head's attention lands on copies of the target.
"""
import argparse
from pathlib import Path

import torch

from unseen.datasets import load_metadata, load_sequences
from unseen.tokens import Vocab
from unseen.train import load_model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run"); ap.add_argument("--data", default="/tmp/unseen-tuning/data/n1000")
    ap.add_argument("--problems", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_model(Path(args.run) / "model.safetensors")
    if model.copy is None: raise SystemExit(f"{args.run}: the model has no copy head")
    path = Path(args.data) / "test_s2.safetensors"
    seqs, cfg = load_sequences(path), load_metadata(path)["config"]
    vocab = Vocab(cfg["n_train"], cfg["n_unseen"])
    print(f"copy form {model.cfg.copy}, gain {model.copy.gain.item():.2f}")
    for i in range(args.problems):
        seq = torch.as_tensor(seqs.tokens[seqs.offsets[i]:seqs.offsets[i + 1]].astype("int64"))[None]   # (1, T)
        with torch.no_grad():
            full = model(seq, record=True)[0]                       # (T, V): main path + copy head
            main_only = model.lm_head(model.resid_final)[0]         # (T, V): the unembedding of the final residual
        print(vocab.decode(seq[0].tolist()))
        for t in range(int(seqs.prompt_len[i]) - 1, seq.shape[1] - 1):
            target = int(seq[0, t + 1])
            on_target = model.copy.pattern[0, t, :t + 1][seq[0, :t + 1] == target].sum()
            print(f"  {vocab.decode([target]):<6} target logit: main {main_only[t, target]:6.1f}, with copy {full[t, target]:6.1f} | "
                  f"best: main {main_only[t].max():5.1f}, with copy {full[t].max():5.1f} ({vocab.decode([int(full[t].argmax())])}) | "
                  f"copy attention on the target {on_target:.2f}")


if __name__ == "__main__":
    main()
