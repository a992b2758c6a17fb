"""What scenario 3 gets wrong: each point where the chain of thought picks its next rule or ends, scenario 1 against 3.

    python tuning/rule_choices.py runs/models/freeze-s0.safetensors [MORE ...] [--data runs/data/n1000]

A derived chain of thought is `= r1 . r2 . ... ? q A`: after `=` and after each `.` the model either
starts the next rule that fires (its body, a name already derived) or writes `?` when none is left.
Teacher-forced, per model and scenario, this prints how often it ends too early (a miss: `?` where a
rule fires), starts a wrong rule (another name), or starts a rule where none fires (a false fire).
A miss means the model did not recognise that a rule's body is a derived name; a wrong rule would be
one name taken for another, which is what near-collinear name rows would cause. Reporting only.
"""
import argparse
from pathlib import Path

import torch

from unseen.evaluate import load_scenarios
from unseen.scoring import teacher_forced
from unseen.tokens import DOT, EQUALS, QMARK
from unseen.train import load_model


def rule_choices(model, seqs, vocab) -> dict:
    "Counts at the rule choices of `seqs`: rules due (`fire`), `miss`, `wrong_rule`; ends due (`end`), `false_fire`."
    pred, _ = teacher_forced(model, seqs)
    counts = dict(fire=0, miss=0, wrong_rule=0, end=0, false_fire=0)
    for i in range(len(seqs)):
        seq, first = seqs[i], int(seqs.offsets[i])
        for t in range(int(seqs.prompt_len[i]), len(seq)):
            if seq[t - 1] not in (EQUALS, DOT): continue       # only the token after `=` or a rule's `.` chooses
            want, got = int(seq[t]), int(pred[first + t])
            if vocab.is_name(want):
                counts["fire"] += 1
                counts["miss"] += got == QMARK
                counts["wrong_rule"] += got not in (want, QMARK)
            elif want == QMARK:
                counts["end"] += 1
                counts["false_fire"] += got != want
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="model files (runs/models/RUN-sS.safetensors)")
    ap.add_argument("--data", default="runs/data/n1000", help="the test sets of the models' seen names (runs/data/nN)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("| model | scenario | rules due | misses | wrong rules | ends due | false fires |\n|---|---|---|---|---|---|---|")
    sets, vocab, _ = load_scenarios(args.data, ("s1", "s3"))
    for path in map(Path, args.models):
        model = load_model(path)
        if model.cfg.vocab_size != len(vocab): raise SystemExit(f"{path}: {model.cfg.vocab_size} tokens, {args.data}: {len(vocab)}")
        for scenario, seqs in sets.items():
            c = rule_choices(model, seqs, vocab)
            print(f"| {path.stem} | {scenario} | {c['fire']} | {c['miss']} | {c['wrong_rule']} | {c['end']} | {c['false_fire']} |",
                  flush=True)


if __name__ == "__main__":
    main()
