"""Helpers for tests that call the command line in-process."""

from __future__ import annotations

from hetcoll.cli import main


def run(capsys, *args):
    """``hetcoll ARGS`` in-process: ``(exit code, stdout, stderr)``."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err, *needles):
    """Exit 2, nothing on stdout, exactly one line on stderr containing every needle."""
    assert code == 2, (code, out, err)
    assert out == ""
    assert err.startswith("hetcoll: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)
