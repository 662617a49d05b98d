"""A user's pair template is untrusted (issue 21, item 1): it renders in Jinja2's immutable
sandbox with ``StrictUndefined`` and no loader. Every probe is refused at plan time as one
line and exit 2, in ``voirdire run --dry-run`` and in a run, before any query; a marker file
that a probe would create never appears. The data is never rendered as a template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voirdire import cli
from voirdire.benchmarks.own_pairs.benchmark import OwnPairs, PairsSpec
from voirdire.benchmarks.own_pairs.prompts import load_template
from voirdire.benchmarks.own_pairs.sandbox import ENV
from voirdire.core import ConfigError

ROWS = [
    {"uid": "q1", "prompt": "Capital of France?", "out_x": "Paris.", "out_y": "Lyon."},
    {
        "uid": "q2",
        "prompt": "Say {{ 7*7 }} and {% raw %}",
        "out_x": "{{ cycler.__init__ }}",
        "out_y": "{# x #}",
    },
]
COLUMNS = {
    "id": "uid",
    "instruction": "prompt",
    "output_a": "out_x",
    "output_b": "out_y",
}
SAFE = "{% block user %}Q: {{ instruction }}\n1: {{ output_1 }}\n2: {{ output_2 }}\nVerdict: [[1]] or [[2]]{% endblock %}"


def _probes(marker: Path) -> dict[str, tuple[str, str]]:
    """name -> (template source, what the one-line error says)."""
    run = f"{{{{ cycler.__init__.__globals__.os.popen('touch {marker}').read() }}}}"
    return {
        "globals": (run, "access to attribute '__init__'"),
        "subclasses": (
            "{{ ''.__class__.__mro__[1].__subclasses__() }}",
            "access to attribute '__class__'",
        ),
        "include": ("{% include '/etc/passwd' %}", "{% include %} is not allowed"),
        "import": (
            "{% import 'helper.jinja' as h %}{{ h.x }}",
            "{% import %} is not allowed",
        ),
        "from_import": (
            "{% from 'helper.jinja' import x %}{{ x }}",
            "{% from ... import %} is not allowed",
        ),
        "extends": ("{% extends 'helper.jinja' %}", "{% extends %} is not allowed"),
        "zero_division": (
            "{{ instruction }}{{ 1/0 }}",
            "ZeroDivisionError: division by zero",
        ),
        "unknown_field": (
            "{{ instruction }} {{ not_a_column }}",
            "field 'not_a_column' is not in the data",
        ),
        "append": (
            "{% set xs = [1] %}{{ xs.append(2) }}",
            "access to attribute 'append'",
        ),
        "huge_string": ("{{ 'a' * 10**9 }}", "over 1,000,000 items"),
        "huge_power": ("{{ ((10**999)**999)**999 }}", "bits) is not allowed"),
        "format_attr": ("{{ '{0.__class__}'.format(instruction) }}", "SecurityError"),
        "attr_filter": (
            "{{ (instruction|attr('__class__')).__mro__ }}",
            "access to attribute '__class__'",
        ),
        "lipsum": ("{{ lipsum(10**6) }}", "'lipsum' is not in the data"),
    }


def _setup(tmp_path: Path, source: str, marker: Path) -> Path:
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    (tmp_path / "tpl.jinja").write_text(source, encoding="utf-8")
    # a template beside it that would run the code if import/extends could reach it
    (tmp_path / "helper.jinja").write_text(
        f"{{% set x = cycler.__init__.__globals__.os.popen('touch {marker}').read() %}}",
        encoding="utf-8",
    )
    job = tmp_path / "job.toml"
    job.write_text(
        f'name = "probe"\noutput_dir = "{tmp_path / "out"}"\n'
        '[benchmark]\nname = "pairs"\n'
        f'[benchmark.pairs]\npath = "{data}"\ntemplate = "{tmp_path / "tpl.jinja"}"\n'
        'verdict_pattern = "\\\\[\\\\[(1|2)\\\\]\\\\]"\nverdict_labels = ["1", "2"]\n'
        '[benchmark.pairs.columns]\nid = "uid"\ninstruction = "prompt"\noutput_a = "out_x"\noutput_b = "out_y"\n'
        '[comparison]\nmode = "pairwise"\npermutations = "both"\n'
        '[[judges]]\nname = "sim"\nbackend = "simulated"\n',
        encoding="utf-8",
    )
    return job


@pytest.mark.parametrize("probe", list(_probes(Path("m"))))
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_template_probe_is_refused_in_one_line_before_any_query(
    tmp_path, monkeypatch, probe, dry_run
):
    monkeypatch.setattr(cli.err_console, "width", 10_000)  # no wrapping of the one line
    marker = tmp_path / "PWNED"
    source, says = _probes(marker)[probe]
    job = _setup(tmp_path, source, marker)
    args = ["run", str(job), "--no-progress"] + (["--dry-run"] if dry_run else [])
    res = CliRunner().invoke(cli.app, args)
    out = res.output.strip()
    assert res.exit_code == 2, out
    assert len(out.splitlines()) == 1 and out.startswith("error: pair template"), out
    assert says in out, out
    assert "Traceback" not in out and "root:" not in out
    assert not marker.exists(), "the template ran code"
    assert not (tmp_path / "out").exists(), (
        "something was written (or asked) before the refusal"
    )


@pytest.mark.parametrize("probe", ["globals", "import", "extends"])
def test_dry_run_with_an_api_judge_runs_no_template_code(tmp_path, monkeypatch, probe):
    """A dry run estimates an API judge's tokens over every prompt: on d3044eb's code that
    rendered the template in a plain environment and ran the probe's command."""
    monkeypatch.setattr(cli.err_console, "width", 10_000)
    marker = tmp_path / "PWNED"
    job = _setup(tmp_path, _probes(marker)[probe][0], marker)
    api = 'backend = "openai_compatible"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    job.write_text(job.read_text().replace('backend = "simulated"\n', api))
    res = CliRunner().invoke(cli.app, ["run", str(job), "--dry-run"])
    assert res.exit_code == 2 and res.output.startswith("error: pair template"), (
        res.output
    )
    assert not marker.exists(), "the template ran code"


def test_a_safe_template_still_plans(tmp_path):
    job = _setup(tmp_path, SAFE, tmp_path / "PWNED")
    res = CliRunner().invoke(cli.app, ["run", str(job), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "2 instances" in res.output


def test_data_is_sent_verbatim_never_rendered(tmp_path):
    _setup(tmp_path, SAFE, tmp_path / "PWNED")
    spec = PairsSpec(path=str(tmp_path / "pairs.jsonl"), columns=COLUMNS, template=str(tmp_path / "tpl.jinja"),
                     verdict_pattern=r"\[\[(1|2)\]\]", verdict_labels=["1", "2"])  # fmt: skip
    bench = OwnPairs(spec)
    for shown in (("out_x", "out_y"), ("out_y", "out_x")):
        prompt = bench.build_prompt("q2", shown, 2)
        assert "Q: Say {{ 7*7 }} and {% raw %}\n" in prompt and "49" not in prompt
        assert "{{ cycler.__init__ }}" in prompt and "{# x #}" in prompt


def test_builtin_templates_render_in_the_same_sandbox():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    assert isinstance(ENV, ImmutableSandboxedEnvironment) and ENV.loader is None
    for name in ("mtbench", "llmbar"):
        t = load_template(name)
        assert t.compiled.environment is ENV
        system, user = t.render({"instruction": "I", "output_1": "X", "output_2": "Y"})
        assert "I" in user and "X" in user and "Y" in user


def test_render_error_after_planning_is_a_config_error_not_a_traceback():
    t = load_template("mtbench")
    with pytest.raises(
        ConfigError,
        match=r"^pair template 'mtbench': UndefinedError: 'output_2' is undefined$",
    ):
        t.render({"instruction": "I", "output_1": "X"})
