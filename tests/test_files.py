"""Writing files safely: atomic over regular files and new paths, through to
devices and FIFOs, following symlinks, one line + exit 2 for a place that cannot be written."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import one_line_error, run
from hetcoll import load_platform, save_platform
from hetcoll.errors import OutputError
from hetcoll.files import (
    check_output,
    check_output_dir,
    open_output,
    read_text,
    umask_mode,
    write_atomic,
)
from hetcoll.platform import write_atomic as platform_write_atomic

PROC = Path("/proc/self").exists()

# every command that writes a file, with the arguments that make it write PATH
WRITERS = {
    "plan": ["plan", "fig1", "--root", "1", "-o"],
    "export": ["export", "fig1", "--format", "json", "-o"],
    "probe": ["probe", "-o"],
}


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_missing_directory_is_one_line(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *WRITERS[command], "nope/s.json")
    one_line_error(code, out, err, "nope/s.json: no such directory")
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not PROC, reason="needs Linux /proc")
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_an_unwritable_place_is_one_line(capsys, command):
    code, out, err = run(capsys, *WRITERS[command], "/proc/x.json")
    one_line_error(code, out, err, "/proc/x.json: cannot write in /proc")


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_an_empty_path_is_an_error(capsys, command):
    code, out, err = run(capsys, *WRITERS[command], "")
    one_line_error(code, out, err, "empty")


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_directory_is_refused(capsys, tmp_path, command):
    code, out, err = run(capsys, *WRITERS[command], tmp_path)
    one_line_error(code, out, err, "is a directory")
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not PROC, reason="needs Linux /proc")
def test_reproduce_refuses_an_unwritable_directory_before_it_runs(capsys, monkeypatch):
    import dataclasses

    from hetcoll.experiments import EXPERIMENTS

    def never(config):  # pragma: no cover - the check must come first
        raise AssertionError("the experiment ran")

    exp = dataclasses.replace(EXPERIMENTS["banikazemi-fig1"], func=never)
    monkeypatch.setitem(EXPERIMENTS, "banikazemi-fig1", exp)
    code, out, err = run(capsys, "reproduce", "banikazemi-fig1", "--out", "/proc/x")
    one_line_error(code, out, err, "/proc/x: cannot write in /proc")
    code, out, err = run(capsys, "reproduce", "banikazemi-fig1", "--out", "")
    one_line_error(code, out, err, "empty")


def test_reproduce_refuses_a_file_as_its_directory(capsys, tmp_path):
    f = tmp_path / "f"
    f.write_text("keep")
    code, out, err = run(capsys, "reproduce", "banikazemi-fig1", "--out", f)
    one_line_error(code, out, err, "not a directory")
    assert f.read_text() == "keep"


def test_a_symlink_is_followed(capsys, tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    assert run(capsys, "plan", "fig1", "--root", "1", "-o", link)[0] == 0
    assert link.is_symlink() and os.readlink(link) == "target.json"
    assert json.loads(target.read_text())["algorithm"] == "fnf"
    assert leftovers(tmp_path) == ["link.json", "target.json"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to("new.json")
    assert run(capsys, "export", "fig1", "--format", "json", "-o", dangling)[0] == 0
    assert dangling.is_symlink() and load_platform(tmp_path / "new.json").ids[0] == "1"


def test_a_fifo_is_written_through(capsys, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the writer's open never blocks
    try:
        assert run(capsys, "plan", "fig1", "--root", "1", "-o", fifo)[0] == 0
        data = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert json.loads(data)["format"] == "hetcoll-schedule"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert leftovers(tmp_path) == ["pipe"]


def test_a_character_device_is_written_through(capsys, tmp_path):
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    for args in (WRITERS["plan"], WRITERS["export"]):
        assert run(capsys, *args, link)[0] == 0
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert leftovers(tmp_path) == ["null"]


@pytest.mark.skipif(not PROC, reason="needs /proc/self/fd")
def test_dev_stdout_is_this_process_own_stdout(tmp_path):
    # through a link to /dev/stdout (never the real one: a broken writer would replace it)
    link = tmp_path / "stdout"
    link.symlink_to("/dev/stdout")
    out = tmp_path / "out.txt"
    hetcoll = [sys.executable, "-m", "hetcoll", "plan", "fig1", "--root", "1", "-o", link]
    with open(out, "w") as fh:  # stdout a regular file: the schedule, then the report, in order
        proc = subprocess.run(hetcoll, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    schedule, _, report = out.read_text().partition("fnf: bcast of 0 B from 1 on fig1\n")
    assert json.loads(schedule)["algorithm"] == "fnf"
    assert report.startswith("predicted time: 400 µs")
    proc = subprocess.run(hetcoll, capture_output=True, text=True, timeout=60)  # a pipe
    assert proc.returncode == 0 and '"format": "hetcoll-schedule"' in proc.stdout
    assert link.is_symlink()


def test_an_existing_file_keeps_its_permissions_a_new_one_gets_the_umask(tmp_path):
    old = tmp_path / "old.json"
    old.write_text("x")
    old.chmod(0o640)
    write_atomic(old, "new")
    assert old.read_text() == "new" and stat.S_IMODE(old.stat().st_mode) == 0o640
    new = tmp_path / "new.json"
    write_atomic(new, b"\x89PNG")
    assert new.read_bytes() == b"\x89PNG" and stat.S_IMODE(new.stat().st_mode) == umask_mode()


def test_nothing_half_written_when_writing_fails(tmp_path):
    target = tmp_path / "s.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), open_output(target) as fh:
        fh.write("half")
        raise RuntimeError("the writer failed")
    assert target.read_text() == "old" and leftovers(tmp_path) == ["s.json"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only file")
def test_a_read_only_file_or_directory_is_refused(tmp_path):
    ro = tmp_path / "ro.json"
    ro.write_text("keep")
    ro.chmod(0o444)
    with pytest.raises(OutputError, match="permission denied"):
        write_atomic(ro, "new")
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="cannot write in"):
            check_output(d / "x.json")
    finally:
        d.chmod(0o755)
    assert ro.read_text() == "keep"


def test_the_api_raises_output_errors(tmp_path):
    p = load_platform("fig1")
    for bad, message in [
        ("", "empty"),
        (tmp_path, "is a directory"),
        (tmp_path / "nope" / "p.json", "no such directory"),
    ]:
        with pytest.raises(OutputError, match=message):
            save_platform(p, bad)
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="not a directory"):
        check_output_dir(tmp_path / "f" / "sub")
    assert platform_write_atomic is write_atomic  # moved, still importable from platform


def test_reading_names_what_is_wrong(tmp_path):
    from hetcoll.errors import PlatformError

    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PlatformError, match="not a text file"):
        read_text(binary, PlatformError)
    with pytest.raises(PlatformError, match="cannot read"):
        read_text(tmp_path, PlatformError)
