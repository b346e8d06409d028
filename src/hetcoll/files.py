"""Reading and writing hetcoll's files safely.

Writing (``-o PATH``, ``--out DIR``, :func:`~hetcoll.platform.save_platform`, figures, results)
goes through :func:`open_output` / :func:`write_atomic`, which decide by what is at the path:

- a regular file or a new path: written **atomically**, to a temporary file in the same
  directory renamed over the path at the end (``os.replace``), so a reader never sees half a
  file and an error leaves the old one intact; an existing file keeps its permissions, a new
  one gets the umask's;
- a character device or a FIFO (``/dev/null``, a terminal, a named pipe): **written
  through**, as a shell redirection would, never replaced by a regular file;
- ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``: written through
  this process's own descriptor (so ``-o /dev/stdout > out.txt`` appends to ``out.txt`` in
  order with the rest of the output);
- a symlink: **followed**, its target is written (the link stays a link);
- anything else -- an empty path, a directory, a missing or read-only directory, a socket --
  is an :class:`~hetcoll.errors.OutputError` naming the path, raised before anything is
  written.  :func:`check_output` (and :func:`check_output_dir` for ``--out DIR``) runs the
  same checks up front, so a command can refuse a bad path before it does any work.

Reading (platform files, schedule files, ``--model`` objects) goes through
:func:`read_text` and :func:`parse_document`: a file that is not UTF-8 text or a document
nested deeper than :data:`MAX_DEPTH` is an error of the caller's type, found before the
parser recurses into it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .errors import HetcollError, OutputError

__all__ = [
    "MAX_DEPTH",
    "check_output",
    "check_output_dir",
    "make_output_dir",
    "open_output",
    "write_atomic",
    "umask_mode",
    "read_text",
    "parse_document",
    "read_document",
]

#: Deepest nesting of lists and objects a document may have (hetcoll's own need at most 8).
MAX_DEPTH = 64
# this process's own descriptors, reached through /dev/stdout -> /proc/self/fd/1
_FD_LINK = re.compile(r"/(?:proc/(?:self|thread-self|(\d+))/fd|dev/fd)/(\d+)")
_MAX_LINKS = 40  # as the kernel's ELOOP


# -- writing -------------------------------------------------------------------------------------


def umask_mode(mode: int = 0o666) -> int:
    """``mode`` with the process umask applied: the permissions ``open()`` would give."""
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


def _resolve(path: str | os.PathLike) -> tuple[Path, int | None]:
    """Follow ``path``'s symlinks: ``(final path, None)``, or ``(link, fd)`` when the chain
    reaches one of this process's descriptors (``/dev/stdout`` -> ``/proc/self/fd/1``)."""
    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        raise OutputError("output path: empty; give a file name")
    current = os.path.abspath(text)
    for _ in range(_MAX_LINKS):
        match = _FD_LINK.fullmatch(current)
        if match and match.group(1) in (None, str(os.getpid())):
            return Path(current), int(match.group(2))
        if not os.path.islink(current):
            return Path(os.path.realpath(current)), None
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    raise OutputError(f"{text}: too many levels of symbolic links")


def _plan_output(path: str | os.PathLike) -> tuple[str, Path, int | None]:
    """How to write ``path``: ``("fd", link, n)``, ``("through", target, None)`` or
    ``("atomic", target, None)``; :class:`OutputError` if it cannot be written."""
    shown = os.fspath(path) if isinstance(path, str | os.PathLike) else repr(path)
    target, fd = _resolve(path)
    if fd is not None:
        return "fd", target, fd
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
    if st is None:
        parent = target.parent
        if not parent.exists():
            raise OutputError(f"{shown}: no such directory: {parent}")
        if not parent.is_dir():
            raise OutputError(f"{shown}: not a directory: {parent}")
        return "atomic", target, None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{shown}: is a directory; give a file name")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        if not os.access(target, os.W_OK):
            raise OutputError(f"{shown}: permission denied")
        return "through", target, None
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{shown}: not a regular file, a character device or a FIFO")
    if not os.access(target, os.W_OK):
        raise OutputError(f"{shown}: permission denied (the file is read-only)")
    return "atomic", target, None


def _try_create(directory: Path, shown: str) -> None:
    """Create and remove a file in ``directory``: the only sure test that it takes files
    (``/proc`` and read-only mounts pass ``os.access`` as root)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hetcoll-check.", dir=directory)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write in {directory}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(tmp)


def check_output(path: str | os.PathLike) -> None:
    """Raise :class:`OutputError` now if :func:`write_atomic` could not write ``path``.

    Nothing is left behind (a probe file in the directory is created and removed)."""
    how, target, _ = _plan_output(path)
    if how == "atomic":
        _try_create(target.parent, os.fspath(path))


def check_output_dir(path: str | os.PathLike) -> None:
    """Raise :class:`OutputError` now if :func:`make_output_dir` could not make ``path`` or
    files could not be written in it.  Creates nothing."""
    text = os.fspath(path)
    if not text:
        raise OutputError("output directory: empty; give a directory name")
    target = Path(os.path.realpath(text))
    if target.exists() and not target.is_dir():
        raise OutputError(f"{text}: not a directory")
    existing = target
    while not existing.exists():  # the nearest ancestor that exists will hold the new ones
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{text}: not a directory: {existing}")
    _try_create(existing, text)


def make_output_dir(path: str | os.PathLike) -> Path:
    """Create directory ``path`` (and its parents) if needed; :class:`OutputError` if not."""
    check_output_dir(path)
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{os.fspath(path)}: cannot create: {exc.strerror or exc}") from None
    return Path(path)


@contextlib.contextmanager
def open_output(path: str | os.PathLike, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object to write ``path`` with, by the rules of the module docstring.

    The data lands at ``path`` when the block ends without an exception; on an exception a
    regular file is left as it was (the temporary file is removed) and the exception
    propagates (an ``OSError`` as :class:`OutputError`).
    """
    how, target, fd = _plan_output(path)
    shown = os.fspath(path)
    mode = "wb" if binary else "w"
    encoding = None if binary else "utf-8"
    try:
        if how == "fd":
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()  # keep the order of what this process writes to fd
            with os.fdopen(os.dup(fd), mode, encoding=encoding) as fh:
                yield fh
            return
        if how == "through":
            with open(target, mode, encoding=encoding) as fh:
                yield fh
            return
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        except OSError as exc:
            raise OutputError(
                f"{shown}: cannot write in {target.parent}: {exc.strerror or exc}"
            ) from None
        yield from _atomic(target, fd, tmp, mode, encoding)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None


def _atomic(target: Path, fd: int, tmp: str, mode: str, encoding: str | None) -> Iterator[IO[Any]]:
    try:
        try:
            perms = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            perms = umask_mode()  # mkstemp makes 0600; a new file is an ordinary file
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
        os.chmod(tmp, perms)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path``: atomically over a regular file
    or a new path, through to a device or FIFO, following symlinks (see the module
    docstring).  Raises :class:`OutputError` naming the path if it cannot be written."""
    with open_output(path, binary=isinstance(data, bytes)) as fh:
        fh.write(data)


# -- reading -------------------------------------------------------------------------------------


def read_text(path: str | os.PathLike, error: type[HetcollError]) -> str:
    """The text of ``path`` (UTF-8), or ``error`` naming what is wrong with the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"not a text file (byte {exc.start} is not UTF-8: {data[exc.start : exc.start + 1]!r})"
        ) from None


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def _json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (a scan, no recursion)."""
    depth = deepest = 0
    for m in _JSON_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif c in "]}":
            depth -= 1
    return deepest


def _yaml_depth(text: str, yaml) -> int:
    """The deepest nesting of YAML collections, from the parser's event stream (iterative,
    stopped as soon as it is too deep; libyaml's parser when it is there)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    opening = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    closing = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    depth = deepest = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, opening):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif isinstance(event, closing):
            depth -= 1
    return deepest


def parse_document(text: str, fmt: str, error: type[HetcollError]) -> Any:
    """Parse ``text`` as ``fmt`` (``"json"`` or ``"yaml"``): plain data, or ``error`` with
    the parser's message.  A document nested deeper than :data:`MAX_DEPTH` is refused before
    the (recursive) parser sees it."""
    if fmt == "yaml":
        return _parse_yaml(text, error)
    if _json_depth(text) > MAX_DEPTH:
        raise error(f"not a hetcoll document: nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of 5000 digits
        raise error(f"not valid JSON: {exc}") from None


def _parse_yaml(text: str, error: type[HetcollError]) -> Any:
    import yaml

    try:
        if _yaml_depth(text, yaml) > MAX_DEPTH:
            raise error(f"not a hetcoll document: nested deeper than {MAX_DEPTH} levels")
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise error(f"not valid YAML: {problem}{where}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # a constructor's own failure: a 5000-digit integer, a timestamp out of range, ...
        raise error(f"not valid YAML: {exc}") from None


def read_document(path: str | os.PathLike, error: type[HetcollError]) -> Any:
    """Read and parse a JSON file (YAML for ``.yaml``/``.yml``): :func:`read_text` then
    :func:`parse_document`."""
    fmt = "yaml" if Path(path).suffix.lower() in (".yaml", ".yml") else "json"
    return parse_document(read_text(path, error), fmt, error)
