"""Every received input bounded, every refusal one line (issue 43): text handled in linear
time, numeric options checked as they are parsed, job files bounded before they are decoded,
spreadsheet files neutralised and read back, names drawn as data in figures."""

from __future__ import annotations

import time

import pytest
import typer

from voirdire import cli
from voirdire.cli.common import fail
from voirdire.redaction import redact, redact_message


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setattr(cli.err_console, "width", 10_000)  # no wrapping of the one line


# --- item 7: linear-time text handling ----------------------------------------------------


def _cpu(f, text: str, at_least: float = 0.02) -> float:
    """CPU seconds of one ``f(text)``: the best of 3 rounds, each repeated until it took
    ``at_least`` seconds (so a fast call is not measured as the clock's noise)."""
    best = float("inf")
    for _ in range(3):
        reps, start = 0, time.process_time()
        while (spent := time.process_time() - start) < at_least:
            f(text)
            reps += 1
        best = min(best, spent / reps)
    return best


def _grows_linearly(f, make, n: int = 2000, factor: int = 8) -> None:
    """``f`` on ``factor`` times the text costs less than ``3 * factor`` times as much (a
    linear cost grows ``factor`` times, a quadratic one ``factor**2`` times). The large
    input is tried up to 3 times, stopping at the first under the bound, so quadratic code
    fails after one slow call and linear code is not failed by one unlucky pause."""
    small = _cpu(f, make(n))
    big = make(n * factor)
    for _ in range(3):
        start = time.process_time()
        f(big)
        took = time.process_time() - start
        if took < 3 * factor * small + 0.01:
            return
    pytest.fail(f"{n * factor} characters took {took:.3f} s, {n} took {small:.5f} s")


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "a" * n,
        lambda n: "a." * (n // 2),
        lambda n: "1" * n,
        lambda n: "/" * n,
    ],
    ids=["letters", "dots", "digits", "slashes"],
)
def test_redaction_takes_time_linear_in_the_text(make):
    """At f28ccc8 the unanchored masked-echo pattern was tried at every character of a run
    of key characters and scanned the rest of it each time: 8,000 letters took 0.24 s,
    300 KB (a batch's error message) over 600 s."""
    _grows_linearly(redact_message, make)


def test_redaction_still_removes_masked_echoes_and_keys():
    text = "Incorrect API key provided: abc1************wxyz. Also ****wxyz, sk-abcdefghijkl."
    assert redact(text) == (
        "Incorrect API key provided: [redacted] Also [redacted], [redacted]"
    )
    assert redact("x a*b***c y") == "x a*[redacted] y"
    assert redact("a" * 5000 + "***") == "[redacted]"


@pytest.mark.parametrize(
    "make", [lambda n: "1" * n, lambda n: "<" * n, lambda n: "a." * (n // 2)]
)
def test_a_refusal_quoting_received_text_prints_in_linear_time(make, capsys):
    """rich's default highlighter ran patterns quadratic in a line's length on every
    printed line (8,000 digits: 1.9 s; at f28ccc8 a 300 KB message in an error ran past
    600 s): the command line's consoles print without it."""

    def refuse(text: str) -> None:
        with pytest.raises(typer.Exit):
            fail(text)
        assert capsys.readouterr().err.count("\n") == 1

    _grows_linearly(refuse, make)
