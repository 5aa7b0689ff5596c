"""`fleetplan app` as a server others may reach: it serves without a terminal (systemd, docker,
nohup), listens on 127.0.0.1 unless told otherwise, offers a read-only mode, and holds the
warehouse file only while it reads or writes, so that the command line can use it meanwhile."""

from __future__ import annotations

import string
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from streamlit.testing.v1 import AppTest

from fleetplan.collectors.vllm_server import free_port
from fleetplan.core.errors import WarehouseError
from fleetplan.services.plain_text import plain
from fleetplan.warehouse.db import ENV_VAR
from tests.support.pages import seen
from tests.support.paths import MAIN

READ_ONLY_ENV = "FLEETPLAN_READ_ONLY"


@contextmanager
def served(warehouse: Path, *args: str) -> Iterator[tuple[str, int, subprocess.Popen]]:
    """`fleetplan app ARGS` as a daemon starts it: stdin from /dev/null, no controlling
    terminal (a new session), output to a pipe. Yields (URL, port, process) once it answers."""
    port = free_port()
    command = [sys.executable, "-m", "fleetplan", "app", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--warehouse", str(warehouse), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{url}/_stcore/health", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if process.poll() is not None:
                pytest.fail(f"`fleetplan app` exited {process.returncode}: {process.stdout.read()}")
            assert time.monotonic() < deadline, "the dashboard did not start within 90 s"
            time.sleep(0.5)
        yield url, port, process
    finally:
        process.terminate()
        process.wait(timeout=20)


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a socket listening on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A = LISTEN
                found.add(address)
    return found


LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1 (as /proc writes)


def test_the_documented_command_serves_without_a_terminal(sample_warehouse_path):
    # README: `fleetplan app [--port N] [--warehouse P]`, no --headless; before, Streamlit asked
    # for an e-mail address on stdin and exited with status 255 under systemd, docker or nohup
    with served(sample_warehouse_path) as (url, port, _):
        assert requests.get(url, timeout=10).ok
        addresses = listening_addresses(port)
        if not addresses:
            pytest.skip("/proc/net/tcp is not readable here")
        assert addresses <= LOOPBACK, f"listening beyond this machine: {addresses}"


def test_address_chooses_where_it_listens(sample_warehouse_path):
    with served(sample_warehouse_path, "--address", "0.0.0.0") as (_, port, _):
        addresses = listening_addresses(port)
        if not addresses:
            pytest.skip("/proc/net/tcp is not readable here")
        assert "00000000" in addresses


def test_read_only_is_said_on_the_command_line(sample_warehouse_path):
    with served(sample_warehouse_path, "--read-only") as (_, _, process):
        process.terminate()
        out = process.stdout.read()
    assert "read-only" in out and "localhost" in out


# -- read-only mode and the pages, through AppTest ---------------------------------------------


pytestmark = pytest.mark.usefixtures("fresh_caches")


def page(monkeypatch, warehouse: Path, path: str, *, read_only: bool) -> AppTest:
    monkeypatch.setenv(ENV_VAR, str(warehouse))
    if read_only:
        monkeypatch.setenv(READ_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(READ_ONLY_ENV, raising=False)
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def test_read_only_upload_page_offers_no_upload_and_no_delete(monkeypatch, sample_warehouse_path):
    before = sample_warehouse_path.read_bytes()
    at = page(monkeypatch, sample_warehouse_path, "views/upload.py", read_only=True)
    assert any("read-only" in i.value for i in at.info)
    assert not at.get("file_uploader")
    assert not at.get("arrow_data_frame") or all(
        e.key != "w_sources" for e in at.get("arrow_data_frame")
    )
    assert "w_delete_sources" not in {b.key for b in at.button}
    files = next(df.value for df in at.dataframe if "file_name" in df.value.columns)
    assert not files.empty and "delete" not in files.columns  # what is imported is still listed
    assert sample_warehouse_path.read_bytes() == before  # not even migrated


def test_upload_page_offers_upload_and_delete_when_not_read_only(
    monkeypatch, sample_warehouse_path
):
    at = page(monkeypatch, sample_warehouse_path, "views/upload.py", read_only=False)
    assert at.get("file_uploader")
    assert not any("read-only" in i.value for i in at.info)


def test_read_only_data_page_says_so(monkeypatch, sample_warehouse_path):
    at = page(monkeypatch, sample_warehouse_path, "views/data.py", read_only=True)
    assert any("read-only" in seen(c.value) for c in at.caption)


def test_a_read_only_dashboard_refuses_to_write(monkeypatch, sample_warehouse_path):
    from fleetplan.app import data

    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    with pytest.raises(WarehouseError, match="read-only"):
        data._open(write=True)


def test_read_only_needs_an_existing_warehouse(monkeypatch, tmp_path):
    at = page(monkeypatch, tmp_path / "none.duckdb", "views/data.py", read_only=True)
    assert "fleetplan build" in at.error[0].value
    assert not (tmp_path / "none.duckdb").exists()


# -- text from files is text ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[click](https://evil.example/x)",
        "![img](https://evil.example/i.png)",
        "<img src=https://evil.example/i.png>",
        "**bold** _it_ `code` ~~s~~ $x^2$ :red[red] :material/lock:",
        "# heading",
        "1. list",
        "- item",
        "> quote",
        "a\nb\r\n\tc\x1b[31m",
        "back\\slash\\",
    ],
)
def test_plain_escapes_every_markup_character(text):
    escaped = plain(text)
    assert "\n" not in escaped and "\x1b" not in escaped
    # every ASCII punctuation character is escaped (a backslash before it), none left bare
    index = 0
    while index < len(escaped):
        if escaped[index] == "\\":
            assert escaped[index + 1] in string.punctuation, (escaped, index)
            index += 2
            continue
        assert escaped[index] not in string.punctuation, (escaped, index)
        index += 1
    # what a reader sees is the text on one line, control characters spelled out
    expected = "".join(" " if c in "\r\n\t" else c for c in text).replace("\x1b", "\\x1b")
    assert seen(escaped) == expected


def test_plain_leaves_ordinary_colons_alone_and_breaks_autolinks():
    """A joiner only where an autolink could start (a search of the page for ordinary text, as
    a reader or a browser test does, must find it)."""
    assert "\u2060" not in plain("run.json: 1 run(s), gpu: rtx-4090")
    for link in ("https://evil.example", "HTTP://x.org", "mailto:a", "www.evil.example", "a@b.c"):
        assert "\u2060" in plain(link), link
