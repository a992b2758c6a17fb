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

import numpy as np
import torch

from unseen.evaluate import NEXT_RULE_SEEN, NEXT_RULE_UNSEEN, PROMPT, load_scenarios, token_kinds
from unseen.scoring import teacher_forced
from unseen.tokens import DOT, EQUALS, PAD, QMARK
from unseen.train import load_model


def rule_choices(model, seqs, vocab, cot_format: str = "derived") -> dict:
    "Counts at the rule choices of `seqs`: rules due (`fire`), `miss`, `wrong_rule`; ends due (`end`), `false_fire`."
    if cot_format != "derived": raise ValueError(f"cot_format={cot_format!r}: rule choices are read in the derived format")
    kinds = token_kinds(seqs, vocab, cot_format)               # a rule due: a name right after `=` or a rule's `.`
    pred, _ = teacher_forced(model, seqs)
    prev = np.concatenate([[PAD], seqs.tokens[:-1]])
    fire = np.isin(kinds, (NEXT_RULE_SEEN, NEXT_RULE_UNSEEN))
    end = (kinds != PROMPT) & (seqs.tokens == QMARK) & np.isin(prev, (EQUALS, DOT))
    return dict(fire=int(fire.sum()), miss=int((fire & (pred == QMARK)).sum()),
                wrong_rule=int((fire & (pred != seqs.tokens) & (pred != QMARK)).sum()),
                end=int(end.sum()), false_fire=int((end & (pred != QMARK)).sum()))

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="model files (runs/models/RUN-sS.safetensors)")
    ap.add_argument("--data", default="runs/data/n1000", help="the test sets of the models' seen names (runs/data/nN)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("| model | scenario | rules due | misses | wrong rules | ends due | false fires |\n|---|---|---|---|---|---|---|")
    sets, vocab, cot_format = load_scenarios(args.data, ("s1", "s3"))
    for path in map(Path, args.models):
        model = load_model(path)
        # equal, not just large enough (evaluate's check): a model of another n_train would read other names' ids
        if model.cfg.vocab_size != len(vocab): raise SystemExit(f"{path}: {model.cfg.vocab_size} tokens, {args.data}: {len(vocab)}")
        for scenario, seqs in sets.items():
            c = rule_choices(model, seqs, vocab, cot_format)
            print(f"| {path.stem} | {scenario} | {c['fire']} | {c['miss']} | {c['wrong_rule']} | {c['end']} | {c['false_fire']} |",
                  flush=True)


if __name__ == "__main__":
    main()
