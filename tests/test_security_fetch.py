"""A mirror is not trusted (issue 21, item 7): a manifest path that is absolute or holds
``..`` is refused before pooch writes anything, and every download is cut off past its
manifest size plus a margin. Files are served from 127.0.0.1 as in ``test_fetch.py``."""

from __future__ import annotations

import functools
import gzip
import http.server
import threading
import time
from pathlib import Path

import pytest

from voirdire.benchmarks.releases import mirror
from voirdire.benchmarks.releases.catalogue import fetch_release
from voirdire.benchmarks.releases.fetch import JTJ
from voirdire.benchmarks.releases.jtj import QA_FILES
from voirdire.benchmarks.releases.llmbar import LLMBAR
from voirdire.benchmarks.releases.mirror import (
    SIZE_MARGIN,
    bad_path,
    blob_id,
    read_manifest,
    read_sizes,
)
from voirdire.core import DataError

DATASET = "Dataset/Natural/dataset.json"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Files under the root, and ``/endless/...``: a body that never ends (no length)."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/trickle/"):  # 10 bytes a second, forever (issue 26)
            return self._trickle()
        if self.path.startswith(("/away/", "/home/")):  # a redirect (issue 26)
            host = "localhost" if self.path.startswith("/away/") else "127.0.0.1"
            port = self.server.server_address[1]
            self.send_response(302)
            self.send_header("Location", f"http://{host}:{port}/{self.path[6:]}")
            self.end_headers()
            return None
        if not self.path.startswith("/endless/"):
            return super().do_GET()
        self.send_response(200)
        self.end_headers()
        try:
            for _ in range(64 * 1024):  # up to 4 GiB, unless the client hangs up
                self.wfile.write(b"x" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _trickle(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        try:
            for _ in range(100_000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(root))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _serve(root: Path, rel: str, data: bytes) -> str:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return blob_id(data)


@pytest.mark.parametrize(
    "path, why",
    [("/etc/passwd", "absolute"), ("../x.json", "'..'"), ("Dataset/../../x/dataset.json", "'..'"),
     ("C:/x", "absolute"), ("C:x", "absolute"), ("a\\..\\b", "backslash"), ("a\x00b", "NUL"), ("", "empty")],
)  # fmt: skip
def test_bad_path_names_why(path, why):
    assert why in bad_path(path)


def test_plain_release_paths_are_fine():
    for p in [
        *read_manifest(JTJ.manifest),
        *read_manifest(LLMBAR.manifest),
        "a/..b/c..d",
    ]:
        assert bad_path(p) is None, p


def test_manifest_file_with_an_unsafe_path_is_refused_naming_the_line(tmp_path):
    man = tmp_path / "m.tsv"
    man.write_text(
        f"blob_sha1\tpath\tsize\n{'0' * 40}\tok.json\t3\n{'1' * 40}\t../../etc/cron.d/x\t\n"
    )
    with pytest.raises(
        DataError,
        match=r"m\.tsv' line 3: path '\.\./\.\./etc/cron\.d/x' holds '\.\.'; refused",
    ):
        read_manifest(man)
    man.write_text(f"{'0' * 40}\t/etc/passwd\n")
    with pytest.raises(DataError, match="line 1: path '/etc/passwd' is absolute"):
        read_manifest(man)
    for bad in (f"{'0' * 40}\n", f"{'0' * 40}\tx\t12k\n", f"{'0' * 40}\tx\t1\t2\n"):
        man.write_text(bad)
        with pytest.raises(
            DataError, match=r"line 1 is not 'blob_sha1<TAB>path\[<TAB>size\]'"
        ):
            read_manifest(man)


def test_dotdot_path_in_a_manifest_writes_nothing_outside(server, tmp_path):
    root, url = server
    evil = (
        "Dataset/../../../escape/dataset.json"  # the LLMBar converter would ask for it
    )
    blob = _serve(root, "escape/dataset.json", b"[]")
    _serve(root, "good/escape/dataset.json", b"[]")
    dest = tmp_path / "d" / "data"
    with pytest.raises(
        DataError,
        match=r"release path 'Dataset/\.\./\.\./\.\./escape/dataset\.json' holds '\.\.'; refused",
    ):
        fetch_release(
            dest,
            f"{url}/good/",
            release="llmbar",
            manifest={evil: blob},
            progress=False,
        )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "d"
    ]


def test_download_past_its_manifest_size_is_cut_off(server, tmp_path):
    root, url = server
    data = b'[{"input": "x"}]' + b" " * 300_000
    blob = _serve(root, f"big/{DATASET}", data)
    with pytest.raises(
        DataError,
        match=rf"^{DATASET}: the download ran past {100 + SIZE_MARGIN:,} bytes .*cut off",
    ):
        fetch_release(tmp_path / "data", f"{url}/big/", release="llmbar", manifest={DATASET: blob},
                      sizes={DATASET: 100}, progress=False)  # fmt: skip
    assert list(tmp_path.iterdir()) == []  # no partial directory left


@pytest.mark.timeout(120)
def test_an_endless_body_is_cut_off_at_the_cap_from_a_manifest_file(server, tmp_path):
    _, url = server
    man = tmp_path / "m.tsv"
    man.write_text(f"blob_sha1\tpath\tsize\n{'0' * 40}\t{DATASET}\t1000\n")
    assert read_sizes(man) == {DATASET: 1000}
    with pytest.raises(DataError, match=f"ran past {1000 + SIZE_MARGIN:,} bytes"):
        fetch_release(
            tmp_path / "x" / "data",
            f"{url}/endless/",
            release="llmbar",
            manifest=man,
            progress=False,
        )


def test_without_a_size_the_generic_cap_applies(monkeypatch, server, tmp_path):
    root, url = server
    blob = _serve(root, f"nosize/{DATASET}", b"[]" + b" " * 5000)
    monkeypatch.setattr(mirror, "UNSIZED_CAP", 4096)
    with pytest.raises(DataError, match="ran past 4,096 bytes"):
        fetch_release(
            tmp_path / "data",
            f"{url}/nosize/",
            release="llmbar",
            manifest={DATASET: blob},
            progress=False,
        )


def test_gzip_of_a_local_copy_is_cut_off_when_decompressed(tmp_path):
    copy = tmp_path / "copy"
    (copy / "files" / "Dataset" / "Natural").mkdir(parents=True)
    data = b"[]" + b" " * 2_000_000
    (copy / "files" / f"{DATASET}.gz").write_bytes(gzip.compress(data))
    with pytest.raises(DataError, match=rf"holds more than {10 + SIZE_MARGIN:,} bytes"):
        fetch_release(tmp_path / "data", release="llmbar", source=copy, manifest={DATASET: blob_id(data)},
                      sizes={DATASET: 10}, progress=False)  # fmt: skip


def test_package_manifests_give_true_sizes(data_dir):
    sizes = read_sizes(LLMBAR.manifest)
    assert set(sizes) == set(
        read_manifest(LLMBAR.manifest)
    )  # every LLMBar file has its size
    jtj = read_sizes(JTJ.manifest)
    assert len(jtj) >= 120 and all(0 < n < 8_000_000 for n in jtj.values())
    for target, src in QA_FILES.items():  # the shared tables are the release's files
        assert (data_dir / target).stat().st_size == jtj[src]


def test_dotdot_path_is_refused_for_a_local_copy_too(tmp_path):
    (tmp_path / "secret.json").write_text("[]")
    (tmp_path / "copy").mkdir()
    with pytest.raises(
        DataError, match=r"release path '\.\./secret\.json' holds '\.\.'; refused"
    ):
        fetch_release(tmp_path / "data", release="llmbar", source=tmp_path / "copy",
                      manifest={"../secret.json": blob_id(b"[]")}, progress=False)  # fmt: skip
    (tmp_path / "copy" / "Dataset").symlink_to(tmp_path)  # a symlink out of the copy
    with pytest.raises(DataError, match="resolves outside"):
        fetch_release(tmp_path / "data", release="llmbar", source=tmp_path / "copy",
                      manifest={"Dataset/secret.json": blob_id(b"[]")}, progress=False)  # fmt: skip


# --- issue 26, item 4: a password in --base-url, cross-origin redirects, a slow trickle ---


@pytest.mark.timeout(60)
def test_a_slow_trickle_is_cut_off_at_the_deadline(server, tmp_path):
    _, url = server
    t0 = time.monotonic()
    with pytest.raises(
        DataError, match=rf"^{DATASET}: the download took longer than 1 s .*cut off"
    ):
        fetch_release(tmp_path / "data", f"{url}/trickle/", release="llmbar", manifest={DATASET: "0" * 40},
                      sizes={DATASET: 10_000_000}, progress=False, deadline=1.0)  # fmt: skip
    assert (
        time.monotonic() - t0 < 20
    )  # one file's deadline, not 60 s per read nor retries
    assert list(tmp_path.iterdir()) == []


def test_a_redirect_to_another_origin_is_refused(server, tmp_path):
    root, url = server
    blob = _serve(root, f"moved/{DATASET}", b"[]")
    with pytest.raises(
        DataError,
        match=rf"^{DATASET}: the mirror redirected to another origin \(http://localhost:\d+\); refused",
    ):
        fetch_release(tmp_path / "data", f"{url}/away/moved/", release="llmbar", manifest={DATASET: blob},
                      progress=False)  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_a_redirect_within_the_origin_is_followed(server, tmp_path):
    root, url = server
    blob = _serve(root, f"moved2/{DATASET}", b"[]")
    src = mirror.HTTPMirror(
        f"{url}/home/moved2/", tmp_path / "raw", {DATASET: blob}, False
    )
    assert src.get(DATASET) == b"[]"


def test_a_password_in_the_base_url_is_never_shown(server, tmp_path):
    from typer.testing import CliRunner

    from voirdire import cli

    _, url = server
    secret_url = (
        url.replace("http://", "http://alice:hunter2secret@") + "/nothing-here/"
    )
    res = CliRunner().invoke(cli.app, ["data", "fetch", "llmbar", "--dest", str(tmp_path / "d"),
                                       "--base-url", secret_url, "--no-progress"])  # fmt: skip
    assert res.exit_code == 1
    assert "hunter2secret" not in res.output and "alice" not in res.output
    assert "[redacted]@127.0.0.1" in res.output
    lines: list[str] = []
    root, _ = server
    blob = _serve(root, f"bad/{DATASET}", b"[1]")
    bad_url = url.replace("http://", "http://alice:hunter2secret@") + "/bad/"
    with pytest.raises(DataError) as info:
        fetch_release(tmp_path / "e", bad_url, release="llmbar", manifest={DATASET: blob[::-1]},
                      progress=False, log=lines.append)  # fmt: skip
    shown = str(info.value) + "\n".join(lines)
    assert "hunter2secret" not in shown and "[redacted]@" in shown
