"""Backtracking regexes: ``(a+)+$`` against a 41-character tensor name takes Python's ``re`` days.

Every entry point that matches a user's pattern against tensor names (the trial, a collection's
include_regex read back, the rules, the command line, the hook) runs it in its own process under
a timeout: it must answer at once. A construct RE2 cannot run in linear time is refused with an
error naming the argument; the default regexes that use a lookaround match what ``re`` matches.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.writer import FileWriter
from smdebug.exceptions import RuleConfigurationError, SMDebugValueError
from smdebug.patterns import KNOWN_DEFAULTS, PatternError, compile
from smdebug.trials import create_trial

EVIL = "(a+)+$"
NAME = "a" * 40 + "x"  # 41 characters: `re` tries every split of the a's before failing at "x"
TIMEOUT = 60  # the subprocess: start-up (numpy, torch) on two shared cores; the match itself is microseconds
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(scope="module")
def trial_dir(tmp_path_factory) -> str:
    """Three steps of NAME and a loss, and a collection 'evil' whose include_regex is EVIL (as a
    collections file written by someone else holds it: not checked when written)."""
    root = tmp_path_factory.mktemp("bt") / "trial"
    for step in range(3):
        with FileWriter(trial_dir=str(root), step=step, worker="worker_0") as fw:
            fw.write_tensor(tdata=np.full((2,), step, np.float32), tname=NAME)
            fw.write_tensor(tdata=np.float32(1.0 / (step + 1)), tname="loss")
    cm = CollectionManager()
    cm.add(Collection("evil", include_regex=[EVIL]))
    cm.export(str(root), "worker_0_collections.json")
    return str(root)


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=TIMEOUT, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still matching {EVIL!r} after {TIMEOUT} s")
    proc.wall = time.monotonic() - t0
    return proc


def _timed(call: str) -> str:
    """A script that prints the result of ``call`` and the seconds it took, as JSON."""
    return (
        "import json, sys, time\n"
        "from smdebug.trials import create_trial\n"
        "t0 = time.monotonic()\n"
        f"out = {call}\n"
        "print(json.dumps({'out': out, 's': time.monotonic() - t0}))\n"
    )


ENTRY_POINTS = {
    "Trial.tensor_names(regex=)": (_timed(f"create_trial(sys.argv[1]).tensor_names(regex={EVIL!r})"), []),
    "Trial.tensor_names(collection=) with a stored include_regex": (
        _timed("create_trial(sys.argv[1]).tensor_names(collection='evil')"),
        [],
    ),
    "rule parameter tensor_regex": (
        _timed(
            "[r.invoke(s) for r in [__import__('smdebug.rules.builtin', fromlist=['x']).ExplodingTensor("
            f"create_trial(sys.argv[1]), tensor_regex={EVIL!r})] for s in range(3)]"
        ),
        [],
    ),
}
CLI = {
    "smdebug rules --param tensor_regex=": [
        "rules",
        "{trial}",
        "--rule",
        "ExplodingTensor",
        "--param",
        f"tensor_regex={EVIL}",
    ],
    "smdebug plot --tensor": ["plot", "{trial}", "--tensor", EVIL, "-o", "{tmp}/p.png"],
    "smdebug export --tensor": ["export", "{trial}", "--tensor", EVIL, "--format", "csv", "-o", "{tmp}/e.csv"],
}
COUNTS = {"entry points": 0, "refused": 0, "defaults compared": 0}


@pytest.mark.parametrize("what", sorted(ENTRY_POINTS))
def test_api_entry_point_answers_at_once(trial_dir, what):
    code, _ = ENTRY_POINTS[what]
    proc = _run(code, trial_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["s"] < 5.0, result  # microseconds in fact; generous for two loaded cores
    if "tensor_names" in what:
        assert result["out"] == []  # re.search finds nothing either: the a's are followed by "x"
    COUNTS["entry points"] += 1
    print(f"\n{what}: {result['s'] * 1e3:.1f} ms (process {proc.wall:.1f} s)")


@pytest.mark.parametrize("what", sorted(CLI))
def test_command_line_answers_at_once(trial_dir, tmp_path, what):
    argv = [a.format(trial=trial_dir, tmp=tmp_path) for a in CLI[what]]
    proc = _run("import sys; from smdebug.cli import main; sys.exit(main(sys.argv[1:]))", *argv)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    if what.startswith("smdebug plot"):
        assert proc.returncode == 2 and "no tensor matches --tensor" in proc.stderr
    elif what.startswith("smdebug export"):
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "e.csv").read_text().count("\n") == 1  # the header: nothing matched
    else:  # the pattern matches no tensor: the rule says it evaluated nothing (exit 2), at once
        assert proc.returncode == 2 and "evaluated no tensor" in proc.stdout, proc.stdout + proc.stderr
        assert "(a+)+$" in proc.stdout  # the selection is shown by its pattern
    COUNTS["entry points"] += 1
    print(f"\n{what}: process {proc.wall:.1f} s")


HOOK = """
import collections, json, sys, time
import torch, torch.nn as nn
import smdebug.pytorch as smd
from smdebug.trials import create_trial
out, config = sys.argv[1], sys.argv[2]
model = nn.Sequential(collections.OrderedDict([("a" * 40, nn.Linear(2, 2))]))
if config == "-":
    hook = smd.Hook(out_dir=out, include_regex=["(a+)+$", "weight"], save_config=smd.SaveConfig(save_interval=1))
else:
    hook = smd.Hook.create_from_json_file(config)
hook.register_module(model)
t0 = time.monotonic()
for _ in range(3):
    model(torch.ones(1, 2)).sum().backward()
hook.close()
print(json.dumps({"s": time.monotonic() - t0, "names": create_trial(out).tensor_names()}))
"""


@pytest.mark.parametrize("how", ["Hook(include_regex=)", "hook JSON config include_regex"])
def test_hook_answers_at_once(tmp_path, how):
    """The hook matches every tensor name against the collections' include_regex at each step."""
    out = tmp_path / "out"
    config = "-"
    if how.startswith("hook JSON"):
        config = str(tmp_path / "hook.json")
        Path(config).write_text(
            json.dumps(
                {
                    "LocalPath": str(out),
                    "HookParameters": {"save_interval": "1"},
                    "CollectionConfigurations": [
                        {"CollectionName": "evil", "CollectionParameters": {"include_regex": f"{EVIL},weight"}}
                    ],
                }
            )
        )
    proc = _run(HOOK, str(out), config)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["s"] < 20.0, result
    # "weight" (given beside EVIL) picks the weight and its gradient; (a+)+$ matches no name
    assert result["names"] == [f"Sequential_{'a' * 40}.weight", f"gradient/Sequential_{'a' * 40}.weight"]
    COUNTS["entry points"] += 1
    print(f"\n{how}: 3 steps in {result['s']:.2f} s")


# none starts with "(" and ends with ")": a rule parameter list drops such outer parentheses (rules/params._items)
REFUSED = {
    "lookahead": "(?!gradient).*weight_x",
    "lookbehind": "(?<=a)x",
    "backreference": r"(a)\1",
    "named backreference": "(?P<n>a)(?P=n)x",
    "atomic group": "(?>a+)x",
    "possessive quantifier": "a++x",
    "conditional": "(a)?(?(1)b|c)x",
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_construct_re2_refuses_is_a_clear_error_at_each_entry_point(trial_dir, tmp_path, kind, capsys):
    pattern = REFUSED[kind]
    tr = create_trial(trial_dir)
    with pytest.raises(PatternError) as exc:
        tr.tensor_names(regex=pattern)
    assert str(exc.value).startswith(f"regex {pattern!r}: RE2 refuses it") and "linear" in str(exc.value)
    assert isinstance(exc.value, re.error) and isinstance(exc.value, ValueError)  # 1.0.34 raised re.error
    with pytest.raises(RuleConfigurationError, match="tensor_regex"):
        __import__("smdebug.rules.builtin", fromlist=["x"]).ExplodingTensor(tr, tensor_regex=pattern)
    with pytest.raises(PatternError, match="include_regex of collection 'c'"):
        Collection("c").include(pattern)
    from smdebug.cli import main

    assert main(["plot", trial_dir, "--tensor", pattern, "-o", str(tmp_path / "x.png")]) == 2
    assert main(["export", trial_dir, "--tensor", pattern, "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(f"--tensor {pattern!r}: RE2 refuses it" in e for e in err), err
    assert main(["rules", trial_dir, "--rule", "ExplodingTensor", "--param", f"tensor_regex={pattern}"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "tensor_regex" in err[0] and f"{pattern!r}: RE2 refuses it" in err[0], err
    COUNTS["refused"] += 1


def test_a_refused_pattern_in_the_hook_config_names_the_file_and_key(tmp_path):
    from smdebug.core.config.hook_config import parse_hook_config

    doc = {"HookParameters": {"include_regex": "ok.*, (a)\\1"}}
    with pytest.raises(SMDebugValueError, match=r"include_regex in HookParameters of cfg.json '\(a\)\\\\1': RE2"):
        parse_hook_config(doc, "cfg.json")
    doc = {"CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"include_regex": "(?<!x)y"}}]}
    with pytest.raises(SMDebugValueError, match="include_regex in CollectionParameters of collection 'c'"):
        parse_hook_config(doc, "cfg.json")


def test_not_a_regex_at_all_says_so():
    with pytest.raises(PatternError, match=r"regex '\(unclosed': not a valid regular expression: missing \)"):
        compile("(unclosed", arg="regex")


def test_python_semantics_kept(trial_dir):
    """search (not match) as before; \\Z, {,n} and a compiled pattern's flags mean what re says."""
    tr = create_trial(trial_dir)
    assert tr.tensor_names(regex="oss") == ["loss"]  # anywhere in the name
    assert tr.tensor_names(regex=r"a{40}x\Z") == [NAME]
    assert tr.tensor_names(regex="^lo{,1}ss$") == ["loss"]
    assert tr.tensor_names(regex=re.compile("LOSS", re.IGNORECASE)) == ["loss"]
    assert tr.tensor_names(regex=["^l", "x$"]) == sorted([NAME, "loss"])
    c = compile("[Z{,2}]", arg="x")  # inside a class nothing is rewritten: "Z", "{", ",", "2" and "}"
    assert c.fullmatch(",") and c.fullmatch("}") and not c.fullmatch("0")
    with pytest.raises(PatternError, match="flags"):
        compile(re.compile("x", re.VERBOSE), arg="regex")


def _sample(rng: random.Random) -> str:
    pieces = [
        "gradient",
        "grad",
        "weight",
        "bias",
        "bia",
        "loss_",
        "Loss_",
        "lossX_",
        "input",
        "inpu",
        "in",
        "i",
        "output",
        "auc",
        "aucpr",
        "map",
        "ma",
        "au",
        "ndcg",
        "pre",
        "average_shap/",
        "full_shap/",
        "-",
        "/",
        "@",
        "\n",
        "x",
        "a",
        "b",
        "A",
    ]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))


@pytest.mark.parametrize("pattern", sorted(KNOWN_DEFAULTS))
def test_a_default_regex_with_a_lookaround_matches_what_re_matches_in_linear_time(pattern):
    rng = random.Random(7)
    mine, theirs = compile(pattern, arg="x"), re.compile(pattern)
    hits = 0
    for _ in range(6000):
        s = _sample(rng)
        for mode in ("search", "match"):
            assert bool(getattr(mine, mode)(s)) == bool(getattr(theirs, mode)(s)), (mode, s)
        hits += bool(theirs.search(s))
    assert 0 < hits < 6000  # both outcomes were compared
    long = ["loss._" * 4000, "a-" * 12000 + "auc", "gradient" * 3000, "average_shap/" + "b" * 24000]
    t0 = time.monotonic()
    for s in long:
        mine.search(s)
    assert time.monotonic() - t0 < 1.0  # re needs 2.6 s for .*loss._(?!input).*output on 2000 characters
    COUNTS["defaults compared"] += 1


def test_every_framework_default_regex_compiles():
    import importlib.util

    from smdebug.pytorch.collection import PYTORCH_COLLECTIONS
    from smdebug.xgboost.collection import DEFAULT_REGEXES

    # smdebug.mxnet's __init__ imports mxnet (its own virtualenv); its collection module does not
    spec = importlib.util.spec_from_file_location("mx_collection", Path(SRC) / "smdebug" / "mxnet" / "collection.py")
    mx_collection = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mx_collection)
    for defaults in (PYTORCH_COLLECTIONS, mx_collection.MXNET_COLLECTIONS):
        for rx in [*defaults.created.values(), *defaults.on_demand.values()]:
            if rx:
                compile(rx, arg="default")
    for rx in DEFAULT_REGEXES.values():
        compile(rx, arg="default")
    compile("^(?!gradient).*bias", arg="TF 2 biases")


def test_zz_counts():
    print(f"\nbacktracking regexes: {COUNTS}")
