"""The documentation site: its generated pages are current, it builds with `mkdocs build --strict`
(no warning), and a broken link fails that build."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def test_regenerating_the_rule_catalogue_and_cli_pages_changes_nothing():
    proc = subprocess.run(
        [sys.executable, "tools/gen_docs.py", "--check"], cwd=ROOT, env=_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_generated_pages_cover_every_rule_parameter_and_subcommand():
    from smdebug.cli import build_parser
    from smdebug.rules.builtin import rule_classes

    catalogue = (ROOT / "docs" / "reference" / "rule-catalogue.md").read_text()
    for name, cls in rule_classes().items():
        section = catalogue.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for param in cls.params:
            assert f"| `{param.name}` |" in section, (name, param.name)
    cli = (ROOT / "docs" / "reference" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sub.choices:
        assert f"\n## smdebug {name}\n" in cli, name
    assert "`--rule` `NAME`" in cli.split("\n## smdebug rules\n", 1)[1].split("\n## ", 1)[0]


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]')")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_site_builds_strict_without_warnings(tmp_path):
    proc = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "WARNING" not in out, out
    site = tmp_path / "site"
    trials = (site / "reference" / "api" / "trials.html").read_text()
    assert 'id="smdebug.trials.Tensor.value"' in trials and "ndarray" in trials
    assert (site / "reference" / "rule-catalogue.html").exists() and (site / "reference" / "cli.html").exists()
    index = (site / "index.html").read_text()
    for page in sorted((ROOT / "docs" / "guide").glob("*.md")):  # every guide page joins the nav
        assert f"guide/{page.stem}.html" in index, page.name
    # ... in reading order: start, the frameworks, reading, rules, the command line, smdebug run,
    # profiling, engines, migrating, development last
    order = [
        "getting-started",
        "pytorch",
        "tensorflow",
        "xgboost",
        "mxnet",
        "reading-trials",
        "rules",
        "command-line",
        "zero-code-change",
        "profiling",
        "profiler-trial",
        "profiler-rules",
        "profiling-report",
        "engines",
        "migrating",
        "development",
    ]
    at = [index.index(f'href="guide/{p}.html"') for p in order]
    assert at == sorted(at), [p for _, p in sorted(zip(at, order))]
    last = max(index.index(f'href="guide/{p.stem}.html"') for p in (ROOT / "docs" / "guide").glob("*.md"))
    assert last == at[-1]  # development last
    assert "fonts.googleapis" not in index  # nothing fetched from a CDN
    # the API pages lead with the public API: smdebug.trials in the order of its __all__ (create_trial
    # first), nothing it does not export; the hooks' documented methods, none of the members the
    # framework glue shares with smdebug.core
    import smdebug.trials

    trials_ids = re.findall(r'id="smdebug\.trials\.(\w+)"', (site / "reference" / "api" / "trials.html").read_text())
    assert trials_ids == list(smdebug.trials.__all__), trials_ids
    for page, hook, _own in HOOK_PAGES:
        members = re.findall(rf'id="{re.escape(hook)}\.(\w+)"', (site / "reference" / "api" / page).read_text())
        assert members[0] == "create_from_json_file" and "close" in members, (hook, members)
        assert not set(members) & INTERNAL, (hook, set(members) & INTERNAL)
    for page, hook, _own in HOOK_PAGES:  # every parameter of every hook says what it means
        text = (site / "reference" / "api" / page).read_text()
        rows = dict(
            re.findall(
                r'<tr class="doc-section-item">\s*<td>\s*<code>(\w+)</code>\s*</td>.*?'
                r'<div class="doc-md-description">(.*?)</div>',
                text,
                re.S,
            )
        )
        signature = _class_signature(text, hook)
        for param in re.findall(r"(\w+):", signature.partition("(")[2]):
            assert re.sub(r"<[^>]+>", "", rows.get(param, "")).strip(), (hook, param)
        assert "every 500th step" in rows["save_config"], hook  # what None means
    launch = _class_signature((site / "reference" / "api" / "launch.html").read_text(), "smdebug.launch.launch")
    assert "*args" not in launch and "rules: Any = ()" in launch and "stop_grace: float = 120.0" in launch, launch
    for page, hook, own in HOOK_PAGES:  # the hooks' real keyword arguments, not (*args, **kwargs)
        signature = _class_signature((site / "reference" / "api" / page).read_text(), hook)
        assert "*args" not in signature and "**kwargs" not in signature, signature
        for param in ("out_dir: str | None = None", 'include_workers: str = "one"', *own):
            assert param in signature, (hook, param, signature)


INTERNAL = {
    "make_adapter",
    "open_writer_gate",
    "hold_step",  # the held-step calls of a trainer integration (smdebug.integrations) and the KerasHook
    "complete_held",
    "recording_mode",
    "keep_step",
    "writes",
    "prepared_collections",
    "collection_defaults",
    "adapter",
    "__repr__",
    "__getstate__",
    "__deepcopy__",
    "EvalsLog",
}  # EvalsLog: xgboost.callback.TrainingCallback's type


def test_every_public_hook_member_is_on_its_page_or_internal():
    """A public method added to a hook shows on its API page, or is named internal here."""
    import importlib

    pytest.importorskip("torch")
    pytest.importorskip("xgboost")
    for page, hook, _own in HOOK_PAGES:
        if page == "mxnet.html" or page == "tensorflow.html":
            continue  # their frameworks are in other virtualenvs or slow to import; same BaseHook members
        module, _, name = hook.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        listed = set(
            re.findall(
                r"^        - (\w+)$",
                (ROOT / "docs" / "reference" / "api" / page.replace(".html", ".md")).read_text(),
                re.M,
            )
        )
        public = {n for n in dir(cls) if not n.startswith("_")}
        assert public - listed - INTERNAL == set(), (hook, sorted(public - listed - INTERNAL))


HOOK_PAGES = [
    ("pytorch.html", "smdebug.pytorch.Hook", ["gather_sharded: bool = False"]),
    ("tensorflow.html", "smdebug.tensorflow.KerasHook", ["profiler_config: Any = None"]),
    ("xgboost.html", "smdebug.xgboost.Hook", ["train_data: Any = None"]),
    ("mxnet.html", "smdebug.mxnet.Hook", ["save_all: bool = False"]),
]


def _class_signature(page: str, path: str) -> str:
    """The text of the signature the site shows under the heading of ``path`` (a class: its __init__)."""
    import html
    import re

    after = page.split(f'id="{path}"', 1)[1]
    code = re.search(r'class="doc-signature highlight"><pre><span></span><code>(.*?)</code></pre>', after, re.S)
    assert code is not None, f"no signature after the heading of {path}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", code.group(1))).split())


def test_a_broken_link_fails_the_strict_build(tmp_path):
    yaml = pytest.importorskip("yaml", reason="the docs extra (pip install -e '.[docs]')")

    ours = yaml.safe_load((ROOT / "mkdocs.yml").read_text().split("\nplugins:")[0])
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide/nothing-here.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        yaml.safe_dump({"site_name": "t", "docs_dir": str(docs), "strict": True, "validation": ours["validation"]})
    )
    proc = _mkdocs(config, tmp_path / "site")
    assert proc.returncode != 0
    assert "nothing-here.md" in proc.stdout + proc.stderr


def test_the_readmes_links_resolve():
    """README.md is no page of the site (mkdocs does not check it): its relative links must name files."""
    import re

    readme = (ROOT / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)", readme) if "://" not in t]
    assert targets
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing
