"""smdebug.profiler.reading.byte_columns: digit runs read forwards and backwards, strings grouped
by their bytes and lines matched against a template from both ends, each against a plain Python
reading of the same bytes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from smdebug.profiler.reading.byte_columns import JoinedLines
from smdebug.profiler.reading.trace_lines import templates

DIGITS = "0123456789"


def _tokens(seed: int, long_share: float) -> list[tuple[str, str, str]]:
    """(before, digits, after): runs of 0 to 26 digits (some with a leading zero), mostly short
    or mostly long, between other bytes."""
    rng = random.Random(seed)
    out = []
    for _ in range(4000):
        size = rng.randint(0, 26) if rng.random() < long_share else rng.randint(0, 7)
        run = "".join(rng.choice(DIGITS) for _ in range(size))
        if run and rng.random() < 0.3:
            run = "0" + run
        out.append((rng.choice(["", " ", '"', ": ", "a", "-", "."]), run, rng.choice(["", ",", '"', "}", "x", ".5"])))
    return out


def _joined(tokens) -> tuple[JoinedLines, np.ndarray, np.ndarray]:
    """The tokens one a line, after a first line of 30 bytes (backward reads need bytes before
    them), with where each run starts and ends."""
    lines = [(a + d + z).encode() for a, d, z in tokens]
    data = b"\n".join([b"x" * 30] + lines)
    starts = 31 + np.cumsum([0] + [len(line) + 1 for line in lines[:-1]])
    begin = starts + np.array([len(a) for a, _, _ in tokens])
    return JoinedLines([data], [len(data)]), begin, begin + np.array([len(d) for _, d, _ in tokens])


@pytest.mark.parametrize("size", [1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 64, 70])
def test_literals_are_compared_byte_for_byte_up_to_the_last_position(size):
    """A literal of any length (one gather of up to 32 bytes a row, then the next 32) against
    the bytes at every position of a buffer, the last ones included: equal where Python finds it,
    and nowhere else, whichever of its bytes differs."""
    rng = random.Random(size)
    text = bytes(rng.choice(b'ab"{}:, ') for _ in range(size))
    near = [bytes(b if i != j else (b ^ 1) for i, b in enumerate(text)) for j in range(size)]  # one byte off
    data = b"".join(rng.choice([text, *near, b"x"]) for _ in range(300))
    b = JoinedLines([data], [len(data)])
    pos = np.arange(len(data) + 1)
    assert b.equals(pos, text).tolist() == [data[p : p + size] == text for p in pos.tolist()]


@pytest.mark.parametrize("long_share", [0.05, 0.9])  # few runs go on past 8 digits, most do
@pytest.mark.parametrize("strict", [True, False])
def test_digits_read_the_run_at_each_position(long_share, strict):
    tokens = _tokens(1, long_share)
    b, begin, _ = _joined(tokens)
    value, n, ok = b.digits(begin, strict)
    for i, (_, run, after) in enumerate(tokens):
        full = run + after[: len(after) - len(after.lstrip(DIGITS))]  # the run goes on into what follows
        assert n[i] == min(len(full), 16 + len(full[16:24])), full
        want = 1 <= len(full) <= 18 and (not strict or len(full) == 1 or full[0] != "0")
        assert ok[i] == want, full
        if want:
            assert value[i] == int(full)


@pytest.mark.parametrize("long_share", [0.05, 0.9])
def test_digits_back_read_the_run_that_ends_at_each_position(long_share):
    tokens = _tokens(2, long_share)
    b, _, end = _joined(tokens)
    value, n, ok = b.digits_back(end)
    for i, (before, run, _) in enumerate(tokens):
        text = before + run
        full = text[len(text.rstrip(DIGITS)) :]  # the run goes back into what is before
        want = 1 <= len(full) <= 18 and (len(full) == 1 or full[0] != "0")
        assert ok[i] == want, full
        if len(full) <= 18:
            assert n[i] == len(full)
        if want:
            assert value[i] == int(full)


def test_strings_are_grouped_by_their_bytes():
    rng = random.Random(3)
    # same length, first and last eight bytes, another middle; lengths 0 to 40; many distinct
    # strings (slots of the hash table shared: those are sorted)
    words = ["a" * 8 + m + "b" * 8 for m in "XYZ"] + ["", "n", "Net", "SGD.step", "Step:ModeKeys.TRAIN", "ü∂"]
    words += ["op/" + "".join(rng.choice("abc") for _ in range(rng.randint(0, 37))) for _ in range(3000)]
    strings = [rng.choice(words) for _ in range(20000)]
    data = "\n".join(strings).encode()
    b = JoinedLines([data], [len(data)])
    sizes = [len(s.encode()) for s in strings]
    lo = np.cumsum([0] + [n + 1 for n in sizes[:-1]])
    codes, texts = b.intern(lo, lo + np.array(sizes))
    assert [texts[c] for c in codes.tolist()] == strings
    assert len(texts) == len(set(strings))  # one code a distinct string


def test_a_whole_line_is_read_from_both_ends():
    """The name is what is left between the start and the rest read backwards: a line with
    another key after the name leaves quotes in it, and does not match."""
    line = b'{"name": "Net", "pid": 3, "ph": "X", "ts": 907200, "dur": 259200, "args": {"pid": 4242, "step_num": "17"}}'
    t = templates(line)
    assert t is not None and t.full is not None
    other = [
        b'{"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 12345678901, "dur": 5, '
        b'"args": {"pid": 7, "step_num": "1234567"}}',
        b'{"name": "a", "cat": "b", "pid": 3, "ph": "X", "ts": 1, "dur": 2, "args": {"pid": 1, "step_num": "1"}}',
        b'{"name": "", "pid": 3, "ph": "X", "ts": 0, "dur": 0, "args": {"pid": 0, "step_num": "0"}}',
        b'{"name": "x", "pid": 3, "ph": "X", "ts": 01, "dur": 2, "args": {"pid": 1, "step_num": "1"}}',
        b'{"name": "x", "pid": 3, "ph": "M", "ts": 1, "dur": 2, "args": {"pid": 1, "step_num": "1"}}',
        b"{}",
    ]
    lines = [line] + other
    data = b"[\n" + b",\n".join(lines) + b"\n]"
    b = JoinedLines([data], [len(data)])
    start = 2 + np.cumsum([0] + [len(x) + 2 for x in lines[:-1]])
    stop = start + np.array([len(x) for x in lines])
    ok, out = b.match(t.full, start, stop, whole=True, interned=("name",))
    assert ok.tolist() == [True, True, False, True, False, False, False]
    codes, names = out["name"]
    assert [names[c] for c in codes[ok].tolist()] == ["Net", "Step:ModeKeys.TRAIN", ""]
    assert out["ts"][ok].tolist() == [907200, 12345678901, 0]
    assert out["args.step_num"][ok].tolist() == [17, 1234567, 0]
    assert (out["end"] == stop).all()
    assert [data[p : p + 1] for p in out["args"][ok].tolist()] == [b"{"] * 3
    ok_fwd, _ = b.match(t.full, start, stop)  # from the start only: the same lines
    assert (ok_fwd & (_["end"] == stop)).tolist() == ok.tolist()


def test_strings_whose_hashes_collide_are_grouped_by_their_bytes(monkeypatch):
    from smdebug.profiler.reading import byte_columns

    monkeypatch.setattr(byte_columns, "_group", lambda h: (np.zeros(len(h), dtype=np.int64), [0]))  # one group
    strings = ["ab", "abc", "ab", "a" * 20, "a" * 19 + "b", "a" * 20, ""]
    data = "\n".join(strings).encode()
    b = JoinedLines([data], [len(data)])
    sizes = [len(s) for s in strings]
    lo = np.cumsum([0] + [n + 1 for n in sizes[:-1]])
    codes, texts = b.intern(lo, lo + np.array(sizes))
    assert [texts[c] for c in codes.tolist()] == strings and len(texts) == 5


def test_run_without_bitwise_count_counts_the_same_bytes():
    """numpy 1.x has no bitwise_count (the MXNet environment's numpy < 1.24): the count of bytes
    before the first flagged one is then made by a multiplication, with the same results."""
    from smdebug.profiler.reading import byte_columns as bc

    rng = np.random.default_rng(3)
    tops = rng.integers(0, 2, size=(5000, 8)).astype(np.uint64) * (rng.random((5000, 1)) < 0.8)
    flags = (tops.astype(np.uint64) << (np.arange(8, dtype=np.uint64) * np.uint64(8) + np.uint64(7))).sum(
        axis=1, dtype=np.uint64
    )
    expected = [next((k for k in range(8) if f >> (8 * k + 7) & 1), 8) for f in flags.tolist()]
    assert bc._run_numpy1(flags).tolist() == expected
    assert bc._run(flags).tolist() == expected
    assert bc._run_numpy1(np.zeros(1, dtype=np.uint64)).tolist() == [8]
