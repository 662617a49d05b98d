"""The refusals of issue 43, timed as a user meets them: each ``voirdire ...`` a fresh process
(:func:`perf.log_commands.run`), its wall time and its peak resident memory, for hostile job
files and numeric options. Each must end in one line, exit 2, well within seconds (before,
a 200 MB job name or 200,000 judges ran past 10 and 15 minutes, a 100,000-deep array was a
traceback).

    python -m perf.bench_input_bounds
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from perf.log_commands import run

_BASE = (
    'name = "x"\noutput_dir = "{out}"\n[benchmark]\nname = "mt_bench_human"\n'
    '[[judges]]\nname = "a"\nbackend = "simulated"\n'
)


def _probes(tmp: Path) -> dict[str, list[str]]:
    base = _BASE.format(out=tmp / "out")
    (tmp / "deep.toml").write_text(base + "deep = " + "[" * 100_000 + "\n")
    (tmp / "latin1.toml").write_bytes(
        base.replace('"x"', '"caf\xe9"').encode("latin-1")
    )
    big = tmp / "big.toml"
    big.write_text(base)
    with big.open("r+b") as fh:
        fh.truncate(200 << 20)  # sparse: a 200 MB job name's size
    head = base.split("[[judges]]")[0]
    judge = '[[judges]]\nname = "j{}"\nbackend = "simulated"\n'
    (tmp / "many.toml").write_text(head + "".join(map(judge.format, range(1001))))
    (tmp / "d").mkdir()
    (tmp / "d" / "job.json").write_text("{}")
    (tmp / "attrs.csv").write_text('judge,size\n"a,1\n')
    d = str(tmp / "d")
    return {
        "job: array nested 100,000 deep": ["run", str(tmp / "deep.toml"), "--dry-run"],
        "job: Latin-1": ["run", str(tmp / "latin1.toml"), "--dry-run"],
        "job: 200 MB (sparse)": ["run", str(big), "--dry-run"],
        "job: 1,001 judges": ["run", str(tmp / "many.toml"), "--dry-run"],
        "people --alpha 5e-324": ["people", d, "--alpha", "5e-324"],
        "people --seed 2**200": ["people", d, "--seed", str(2**200)],
        "report --replicates 1e12": ["report", d, "--replicates", str(10**12)],
        "rank --anchor-rating nan": ["rank", d, "--anchor-rating", "nan"],
        "report --judge-attributes (unclosed quote)": [
            "report", d, "--judge-attributes", str(tmp / "attrs.csv"),
        ],
    }  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as t:
        print(
            "| refusal | exit | one line | wall s | peak RSS MiB |\n|---|---|---|---|---|"
        )
        for what, args in _probes(Path(t)).items():
            r = run(args, kill_gib=4)
            one = r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
            print(
                f"| {what} | {r.rc} | {one} | {r.seconds:.2f} | {r.peak_gib * 1024:.0f} |"
            )


if __name__ == "__main__":
    main()
