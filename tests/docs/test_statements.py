"""Statements the documentation makes about the code (commands, counts, layers, file names), checked
against the code so that they cannot drift."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _read(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def _subcommands() -> list[str]:
    from smdebug.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(set(sub.choices))


def test_the_command_line_guide_has_a_row_for_every_command():
    page = _read("docs/guide/command-line.md")
    rows = set(re.findall(r"^\| `smdebug ([a-z]+)", page, flags=re.M))
    aliases = {"inspect"}  # `inspect` is described in info's row ("`inspect` is the same")
    missing = [c for c in _subcommands() if c not in rows and c not in aliases]
    assert not missing, f"docs/guide/command-line.md has no row for: {missing}"
    assert "`inspect` is the same" in page


def test_the_demo_sentence_follows_the_makefile():
    recipe = _read("Makefile").split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    in_make = re.findall(r"smdebug (rules|report|run)\b", recipe)
    sentence = _read("docs/guide/command-line.md").split("`make demo`", 1)[1].split("this is its report", 1)[0]
    assert re.findall(r"smdebug (rules|report|run)\b", sentence) == in_make


def test_the_excluded_metrics_are_named_wherever_the_docs_list_them():
    from smdebug.core.metric_names import INCREASING_METRICS

    for rel in (
        "docs/builtin-rules.md",
        "docs/guide/xgboost.md",
        "src/smdebug/rules/builtin/training.py",
        "src/smdebug/xgboost/hook.py",
    ):
        text = _read(rel)
        assert "auc and map excluded" not in text, rel
        for metric in INCREASING_METRICS:
            assert re.search(rf"\b{metric}\b", text), f"{rel} does not name {metric}"


def test_the_rule_family_table_matches_the_modules():
    from smdebug.rules.builtin import get_rule_class, rule_names

    page = _read("docs/guide/rules.md")
    table = re.findall(r"^\| ([a-z]+)(?: \([^)]*\))? \| ([A-Za-z, ()-]+?) \|$", page, flags=re.M)
    listed = {}
    for family, names in table:
        for name in re.findall(r"[A-Z][A-Za-z]+", re.sub(r"\([^)]*\)", "", names)):
            listed[name] = family
    # the package's own (a test may register a rule of its own in the same process)
    builtin = [n for n in rule_names() if get_rule_class(n).__module__.startswith("smdebug.rules.builtin.")]
    assert sorted(listed) == sorted(builtin)
    for name, family in listed.items():
        assert get_rule_class(name).__module__ == f"smdebug.rules.builtin.{family}", name
    assert f"The {len(builtin)} built-in rules" in page


def test_the_development_guide_states_the_layer_contract():
    config = tomllib.loads(_read("pyproject.toml"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")
    chain = layers["name"].split(":", 1)[1].strip()
    assert f"`{chain}`" in _read("docs/guide/development.md")


def _cited_documents() -> list[tuple[str, str]]:
    cites = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        for m in re.finditer(r"\bdocs/[\w./-]+\.md", path.read_text(encoding="utf-8")):
            cites.append((str(path.relative_to(ROOT)), m.group(0)))
    return cites


@pytest.mark.parametrize("source, doc", _cited_documents())
def test_every_document_the_code_cites_is_in_the_repository(source, doc):
    assert (ROOT / doc).is_file(), f"{source} cites {doc}, which is not in the repository"


def test_numbered_sections_the_code_cites_exist():
    headings = {
        "docs/builtin-rules.md": set(re.findall(r"^#+ (\d+(?:\.\d+)?)\.? ", _read("docs/builtin-rules.md"), re.M)),
        "docs/format.md": set(re.findall(r"^#+ (\d+(?:\.\d+)?)\.? ", _read("docs/format.md"), re.M)),
    }
    seen = 0
    for path in sorted((ROOT / "src").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for doc, number in re.findall(r"(docs/(?:builtin-rules|format)\.md) (?:§|section )(\d+(?:\.\d+)?)", text):
            seen += 1
            assert number in headings[doc], f"{path.relative_to(ROOT)} cites {doc} §{number}, not a heading there"
        for number in re.findall(r"\bspec (\d+\.\d+)\b", text):  # the rules' "spec 3.13": builtin-rules.md
            seen += 1
            assert number in headings["docs/builtin-rules.md"], f"{path.relative_to(ROOT)} cites spec {number}"
    assert seen > 5
