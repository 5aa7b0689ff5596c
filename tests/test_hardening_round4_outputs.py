"""`fleetplan plan`'s output files against what is already at their paths (hardening round 4):
a link is replaced, not written through; a FIFO, socket or device is refused before any work
(never waited on); a failed write leaves the old content whole and no temp file; no output may
replace the scenario, the warehouse or another output; --deploy-out is checked before the plan,
SkyPilot's files are written all or none; an OS error while building the workbook is a message."""

from __future__ import annotations

import argparse
import errno
import os
import resource
import socket
from pathlib import Path

import pytest

from fleetplan.cli.common import output_file, write_output, write_outputs
from fleetplan.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "chat-batch-qwen14b.json"


def _plan(cli, warehouse: Path, *args: object):
    return cli("plan", "--scenario", SCENARIO, "--warehouse", warehouse, *args)


def _temp_files(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


# -- links: the link is replaced, its target left as it was ----------------------------------------


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_link_is_replaced_by_the_file_and_its_target_is_untouched(
    cli, tmp_path, sample_warehouse_template
):
    target = tmp_path / "target.txt"
    target.write_text("KEEP ME\n")
    link = tmp_path / "pools.csv"
    link.symlink_to(target)
    done = _plan(cli, sample_warehouse_template, "--csv", link)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "KEEP ME\n"
    assert not link.is_symlink() and link.is_file()
    assert link.read_text().startswith('"scenario","fleet",')  # the pools CSV, header first
    assert _temp_files(tmp_path) == []


def test_a_link_to_nothing_is_replaced_by_the_file_not_followed(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "plan.json"
    link.symlink_to(tmp_path / "elsewhere" / "made.json")
    write_output(output_file(str(link)), "{}\n", option="--json")
    assert not link.is_symlink() and link.read_text() == "{}\n"
    assert not (tmp_path / "elsewhere" / "made.json").exists()


# -- FIFOs, sockets, devices: refused before any work ----------------------------------------------


@pytest.mark.timeout(120)  # before the fix the write waited forever for a reader
def test_a_fifo_is_refused_before_the_plan_without_waiting(
    cli, tmp_path, sample_warehouse_template
):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    done = _plan(cli, sample_warehouse_template, "--json", fifo)
    assert done.returncode == 2
    assert f"argument --json: {fifo} is a pipe (FIFO)" in done.stderr
    assert done.stdout == ""  # nothing planned
    assert "Traceback" not in done.stderr


@pytest.mark.timeout(30)
def test_a_fifo_appearing_after_the_arguments_is_refused_not_waited_on(tmp_path):
    path = tmp_path / "k.yaml"
    checked = output_file(str(path))
    os.mkfifo(path)
    with pytest.raises(InputError, match=r"--deploy-out .*k\.yaml is a pipe \(FIFO\)"):
        write_output(checked, "kind: Service\n", option="--deploy-out")


def test_sockets_devices_and_links_to_them_are_refused(tmp_path):
    sock_path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        with pytest.raises(argparse.ArgumentTypeError, match="is a socket"):
            output_file(str(sock_path))
    with pytest.raises(argparse.ArgumentTypeError, match="/dev/full is a device"):
        output_file("/dev/full")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "to-fifo.json"
    link.symlink_to(fifo)
    with pytest.raises(argparse.ArgumentTypeError, match=r"is a link to a pipe \(FIFO\)"):
        output_file(str(link))


def test_standard_output_and_open_descriptors_are_still_written_through():
    assert output_file("/dev/stdout") == Path("/dev/stdout")
    read, write = os.pipe()
    try:
        write_output(output_file(f"/dev/fd/{write}"), "a,b\n", option="--csv")
        assert os.read(read, 100) == b"a,b\n"
    finally:
        os.close(read)
        os.close(write)


# -- a failed write: the old content whole, no temp file -------------------------------------------


def test_a_write_over_the_size_limit_keeps_the_old_file_whole(tmp_path):
    """RLIMIT_FSIZE stands in for a full disk (Python ignores SIGXFSZ: the write fails EFBIG)."""
    path = tmp_path / "plan.json"
    path.write_text("OLD\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(InputError) as raised:
            write_output(path, "x" * 100_000, option="--json")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert str(raised.value) == f"--json {path}: cannot write it: File too large"
    assert path.read_text() == "OLD\n"
    assert _temp_files(tmp_path) == []


def test_a_failed_write_through_the_command_keeps_the_old_file(
    cli, tmp_path, sample_warehouse_template, monkeypatch
):
    path = tmp_path / "fleet.yaml"
    path.write_text("OLD\n")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    done = _plan(cli, sample_warehouse_template, "--deploy", "kubernetes", "--deploy-out", path)
    assert done.returncode == 1
    assert f"fleetplan plan: --deploy-out {path}: cannot write it: No space left on device" in (
        done.stderr
    )
    assert done.stderr.count("--deploy-out") == 1  # the option said once
    assert path.read_text() == "OLD\n"
    assert _temp_files(tmp_path) == []


def test_files_written_together_are_all_written_or_none(tmp_path, monkeypatch):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("OLD A\n")
    real_replace = os.replace
    calls = []

    def replace(src, dst):
        calls.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    (tmp_path / "c.yaml").mkdir()  # the third cannot be written: nothing is replaced
    with pytest.raises(InputError, match=r"c\.yaml is a folder"):
        write_outputs(
            [(first, "A\n"), (second, "B\n"), (tmp_path / "c.yaml", "C\n")], option="--deploy-out"
        )
    assert calls == []
    assert first.read_text() == "OLD A\n" and not second.exists()
    assert _temp_files(tmp_path) == []


# -- no output may replace an input or another output ----------------------------------------------


def test_an_output_that_is_the_scenario_is_refused_before_the_plan(
    cli, tmp_path, sample_warehouse_template
):
    scenario = tmp_path / "s.json"
    scenario.write_bytes(SCENARIO.read_bytes())
    done = cli("plan", "--scenario", scenario, "--warehouse", sample_warehouse_template,
               "--json", tmp_path / "." / "s.json")  # fmt: skip
    assert done.returncode == 2
    assert "argument --json:" in done.stderr and "is the scenario (--scenario)" in done.stderr
    assert done.stdout == ""
    assert scenario.read_bytes() == SCENARIO.read_bytes()


def test_an_output_that_is_the_warehouse_is_refused(cli, tmp_path, sample_warehouse_path):
    before = sample_warehouse_path.read_bytes()
    link = tmp_path / "out.csv"
    link.symlink_to(sample_warehouse_path)  # another name of the same file
    for option, path in (("--xlsx", sample_warehouse_path), ("--csv", link)):
        done = _plan(cli, sample_warehouse_path, option, path)
        assert done.returncode == 2, done.stderr
        assert f"argument {option}:" in done.stderr
        assert "is the warehouse (--warehouse)" in done.stderr
    done = cli("plan", "--scenario", SCENARIO, "--json", sample_warehouse_path,
               env={**os.environ, "FLEETPLAN_WAREHOUSE": str(sample_warehouse_path)})  # fmt: skip
    assert done.returncode == 2 and "is the warehouse" in done.stderr
    assert sample_warehouse_path.read_bytes() == before


def test_two_outputs_naming_one_file_are_refused(cli, tmp_path, sample_warehouse_template):
    (tmp_path / "x").mkdir()
    done = _plan(cli, sample_warehouse_template, "--csv", tmp_path / "a.csv",
                 "--fleet-csv", tmp_path / "x" / ".." / "a.csv")  # fmt: skip
    assert done.returncode == 2
    assert "argument --fleet-csv:" in done.stderr and "is also --csv's path" in done.stderr
    assert not (tmp_path / "a.csv").exists()


# -- --deploy-out: checked before the plan, a message not a traceback ------------------------------


@pytest.mark.parametrize(
    ("deploy", "where", "message"),
    [
        ("kubernetes", "folder", "is a folder: give a file path to write"),
        ("kubernetes", "nope/x.yaml", "nope does not exist"),
        ("kubernetes", "file/x.yaml", "is a file, not a folder"),
        ("skypilot", "file", "is not a folder"),
        ("skypilot", "file/sky", "cannot create the folder"),
    ],
)
def test_a_bad_deploy_out_is_refused_before_the_plan(
    cli, tmp_path, sample_warehouse_template, deploy, where, message
):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x\n")
    done = _plan(cli, sample_warehouse_template, "--deploy", deploy, "--deploy-out",
                 tmp_path / where)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "argument --deploy-out:" in done.stderr and message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # refused before the plan


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_skypilot_creates_a_missing_folder_and_writes_every_file(
    cli, tmp_path, sample_warehouse_template
):
    folder = tmp_path / "new" / "sky"
    done = _plan(cli, sample_warehouse_template, "--deploy", "skypilot", "--deploy-out", folder)
    assert done.returncode == 0, done.stderr
    assert len(list(folder.glob("*.yaml"))) >= 2
    assert _temp_files(folder) == []


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_skypilot_writes_no_file_when_one_cannot_be_written(
    cli, tmp_path, sample_warehouse_template
):
    folder = tmp_path / "sky"
    done = _plan(cli, sample_warehouse_template, "--deploy", "skypilot", "--deploy-out", folder)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in folder.glob("*.yaml"))
    assert len(names) >= 2
    again = tmp_path / "again"
    again.mkdir()
    (again / names[-1]).mkdir()  # the last pool's file is a folder
    done = _plan(cli, sample_warehouse_template, "--deploy", "skypilot", "--deploy-out", again)
    assert done.returncode == 1
    assert f"fleetplan plan: --deploy-out {again / names[-1]} is a folder" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in again.iterdir()) == [names[-1]]  # none of the others written


# -- the workbook: an OS error while building it ---------------------------------------------------


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_an_os_error_building_the_workbook_is_a_message(
    cli, tmp_path, sample_warehouse_template, monkeypatch
):
    from fleetplan.services import workbook

    def too_large(*args, **kwargs):
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(workbook, "plan_xlsx", too_large)
    path = tmp_path / "plan.xlsx"
    done = _plan(cli, sample_warehouse_template, "--xlsx", path)
    assert done.returncode == 1
    assert f"fleetplan plan: --xlsx {path}: cannot write it: File too large" in done.stderr
    assert "Traceback" not in done.stderr
    assert not path.exists()
