"""The front door: README.md and docs/ are short, self-contained, and their numbers are the pipeline's."""
import re, subprocess
from pathlib import Path

import pytest
import yaml

from unseen.results import README_BLOCKS, readme_main

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _git_tracked_outputs() -> set:
    "Every output of dvc.yaml that git tracks (`cache: false`), matrix paths with `${...}` as patterns."
    out = set()
    for stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].values():
        for entry in stage.get("outs", []) + stage.get("plots", []) + stage.get("metrics", []):
            if isinstance(entry, dict):
                (path, opts), = entry.items()
                if opts and opts.get("cache") is False: out.add(path)
    return out


def test_the_readme_fits_two_screens_and_keeps_the_commands_ci_runs():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    awk = r"/<!-- test-command -->/{f=1; next} f && /^```bash/{g=1; next} g && /^```/{exit} g"   # as .ci/run reads it
    command = subprocess.run(["awk", awk, "README.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert command.startswith("python3.11 -m venv .venv") and command.endswith("&& pytest -n 2"), command
    assert "<!-- main-command -->" in text and "arxiv.org/abs/2604.21632" in text


def test_every_command_fits_its_code_box():
    "GitHub shows about 95 characters of a code block's line before it scrolls: a command hidden past that is not read."
    blocks = re.findall(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    long = [line for block in blocks for line in block.splitlines() if len(line) > 95]
    assert blocks and not long, long


def test_every_image_and_link_of_the_pages_is_in_the_repository():
    tracked = _git_tracked_outputs()
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)\)", page.read_text()):
            if target.startswith("http"): continue
            path = (page.parent / target).resolve().relative_to(ROOT).as_posix()
            if target.endswith((".png", ".pdf", ".csv")):   # a figure: a pipeline output that git tracks
                assert path in tracked, f"{page.name}: {target} is not a git-tracked output of dvc.yaml"
            else:
                assert (ROOT / path).exists(), f"{page.name}: link to {target}, which does not exist"


def test_figures_and_small_results_are_git_tracked_and_models_are_not():
    tracked = _git_tracked_outputs()
    for path in ("figures/collapse_curves.png", "figures/collapse_curves.pdf", "figures/collapse_curves.csv",
                 "runs/results", "runs/figures", "runs/gemma", "runs/finetune", "runs/lemma"):
        assert path in tracked, path
    assert not [t for t in tracked if t.endswith((".safetensors", ".ipynb")) or t == "runs/data"], tracked
    ignored = subprocess.run(["git", "check-ignore", "-q", "figures/collapse_curves.png"], cwd=ROOT).returncode == 0
    assert not ignored   # no .gitignore entry hides a figure from git


def test_unseen_readme_fills_the_blocks_of_the_real_pages(tmp_path):
    "`unseen-readme` against copies of README.md and docs/results.md: each block replaced, the rest kept."
    for page, source in README_BLOCKS.values():
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text((ROOT / page).read_text())
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / source).write_text(f"generated from {source}\n")
    readme_main(tmp_path)
    for marker, (page, source) in README_BLOCKS.items():
        before, after = (ROOT / page).read_text(), (tmp_path / page).read_text()
        assert f"<!-- {marker} -->\ngenerated from {source}\n<!-- /{marker} -->" in after
        strip = lambda t: re.sub(rf"<!-- {marker} -->.*<!-- /{marker} -->", "", t, flags=re.S)
        assert strip(before) == strip(after)


def test_the_blocks_hold_what_the_pipeline_wrote():
    present = [(m, p, s) for m, (p, s) in README_BLOCKS.items() if (ROOT / s).exists()]
    if not present: pytest.skip("no pipeline outputs in this checkout yet (run dvc repro, then unseen-readme)")
    for marker, page, source in present:
        block = (ROOT / page).read_text().split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
        assert block.strip() == (ROOT / source).read_text().strip(), f"{page} {marker}: run unseen-readme"


def test_the_repository_is_self_contained():
    shared = subprocess.run(["git", "grep", "-n", r"\.\./shared"], cwd=ROOT, capture_output=True, text=True).stdout
    assert shared == "", shared
    for phrase in ("the day before", "the issue's request", "this task was lent", "notes.md", "findings.md"):
        found = subprocess.run(["git", "grep", "-n", "-i", "-F", phrase, "--", ".", ":!tests/test_readme.py"], cwd=ROOT,
                               capture_output=True, text=True).stdout
        assert found == "", found


def test_license_and_citation():
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "Apache-2.0"
    paper = cff["preferred-citation"]
    assert paper["year"] == 2026 and [a["family-names"] for a in paper["authors"]] == ["Lazić", "Fowl", "György", "Szepesvári"]
    assert any(i["value"] == "arXiv:2604.21632" for i in paper["identifiers"])
