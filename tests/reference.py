"""A second, independent solver for the tests: reads a serialised problem back from its tokens and
solves it with plain Python sets, one problem at a time (no numpy, nothing shared with `unseen.logic`)."""
STRUCT = {",", ".", "?", "=", ">", "<bos>", "<eos>", "T", "F", "<pad>"}


def parse_prompt(words):
    "Rules (body tuple, head), facts and query of a prompt given as a list of token strings."
    assert words[0] == "<bos>" and words[-1] == "=" and words[-3] == "?", words
    rules, facts, group = [], [], []
    for w in words[1:-3]:
        if w == ",":
            body = [x for x in group[:-1] if x != ">"]
            rules.append((tuple(body), group[-1])); group = []
        elif w == ".":
            assert len(group) == 1, group
            facts.append(group[0]); group = []
        else:
            group.append(w)
    assert not group
    return rules, facts, words[-2]


def solve(rules, facts, query):
    "Label, minimal proof depth of the query's closure (synchronous rounds) and the canonical firing order."
    known, depth, frontier = set(facts), 0, True
    while frontier:  # synchronous rounds: each round fires every rule whose body was known before it
        new = {h for body, h in rules if set(body) <= known and h not in known}
        frontier = bool(new)
        if new: depth += 1; known |= new
    fired, derived = [], set(facts)
    while True:  # canonical order: the first rule, in prompt order, that is applicable and derives something new
        for i, (body, h) in enumerate(rules):
            if set(body) <= derived and h not in derived:
                fired.append(i); derived.add(h); break
        else:
            break
    assert derived == known
    return query in known, depth, fired


def expected_target(rules, facts, query, cot_format, rule_words):
    "The target token strings the generator must have written for this problem."
    label, depth, fired = solve(rules, facts, query)
    cot = [w for i in fired for w in rule_words[i]] if cot_format == "rules" else [rules[i][1] for i in fired]
    return cot + ["?", query, "T" if label else "F", "<eos>"], label, depth


def check_sequence(words, prompt_len, cot_format):
    "Recompute a sequence's target, label and depth from its prompt alone."
    prompt = words[:prompt_len]
    rules, facts, query = parse_prompt(prompt)
    rule_words, group = [], []
    for w in prompt[1:]:
        if w in (".", "?"): break
        group.append(w)
        if w == ",": rule_words.append(group); group = []
    return expected_target(rules, facts, query, cot_format, rule_words)
