"""The data step: outside data sets fetched from their public source (or a local copy) and checked.

The repository commits only the project's own writing, so a data set such as tiny Shakespeare is
brought by this step, as nanoGPT's prepare.py brings it: downloaded into a git-ignored folder
under data/, its size and SHA-256 checked before it is put where a training reads it. A machine
without internet (CI, a cluster's compute nodes) names a folder holding a copy instead: the same
check applies. Standard library only. Entry point: scripts/get_data.py (--help).

Not here: tokenising (stacklab reads the text itself, one token per character).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import BinaryIO, Callable, Optional
from stacklab.paths import in_root

# The environment variable that names a folder of local copies (the option --local says the same).
LOCAL_ENV = "STACKLAB_DATA_LOCAL"
DEFAULT_TIMEOUT_S = 30.0
CHUNK = 1 << 16

# Exit codes: 0 done, 1 a check failed (checksum, size, vocabulary), 2 bad usage or an unwritable
# destination, 3 the source could not be reached (no network, no local copy).
EXIT_CHECK, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str  # what users type: get_data.py shakespeare_char
    url: str  # the public source
    rel_path: str  # its path below a local-copy folder, mirroring the source's own layout
    dest: str  # its path below the destination folder (default: the repository's data/)
    size: int  # bytes
    sha256: str
    distinct_chars: int  # code points in the decoded text
    about: str


MANIFEST_FORMAT = "stacklab.datasets"


def repo_data_dir() -> Path:
    """The repository's data/ folder (this file is scripts/stacklab/runs/datasets.py)."""
    return Path(in_root("data"))


def load_manifest(path: Path) -> dict[str, Dataset]:
    """The data sets of a manifest (data/datasets.json), by name. The binary compiles the same file
    in (src/data/known_data.h): a run on a file at a data set's place that fails its check is
    flagged in its log and summary.json. A malformed manifest is a ValueError naming the file."""
    j = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(j, dict) or j.get("format") != MANIFEST_FORMAT or j.get("version") != 1:
        raise ValueError(f"{path}: not a data set manifest (format {MANIFEST_FORMAT!r}, version 1)")
    fields = [f.name for f in dataclasses.fields(Dataset)]
    out = {}
    for i, d in enumerate(j.get("datasets", [])):
        if not isinstance(d, dict) or sorted(d) != sorted(fields):
            raise ValueError(f"{path}: datasets[{i}] must have exactly the keys {', '.join(fields)}")
        out[d["name"]] = Dataset(**d)
    return out


# Every data set the project fetches, defined once in data/datasets.json: the data step, the
# binary's check of a run's data, the docs and the tests read it.
DATASETS = load_manifest(repo_data_dir() / "datasets.json")


class DataStepError(Exception):
    """A failure with its message (one line naming the file, folder or option) and exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def check_file(ds: Dataset, path: Path, what: str) -> None:
    """Raises DataStepError (EXIT_CHECK) unless `path` has the data set's size, SHA-256 and
    number of distinct characters. `what` names where the file came from, for the message."""
    size = path.stat().st_size
    digest = sha256_of(path)
    if size != ds.size or digest != ds.sha256:
        short = " (truncated)" if size < ds.size else ""
        raise DataStepError(
            f"{what}: {size:,} bytes{short}, SHA-256 {digest}; expected {ds.size:,} bytes, SHA-256 {ds.sha256}"
            " -- not the file the project's results were measured on",
            EXIT_CHECK,
        )
    n = len(set(path.read_text(encoding="utf-8")))
    if n != ds.distinct_chars:  # cannot happen with a matching checksum; kept as the spec's statement
        raise DataStepError(f"{what}: {n} distinct characters, expected {ds.distinct_chars}", EXIT_CHECK)


def local_candidates(ds: Dataset, folder: Path) -> list[Path]:
    """Where a copy is looked for in a local-copy folder: the source's layout, then the bare name."""
    return [folder / ds.rel_path, folder / Path(ds.rel_path).name]


def open_local(ds: Dataset, folder: Path) -> tuple[BinaryIO, str]:
    """`folder` holds a copy (see local_candidates), or is the copy itself (--local PATH/input.txt)."""
    if folder.is_file():
        return open(folder, "rb"), str(folder)
    if not folder.exists():
        raise DataStepError(f"local copy '{folder}' (--local / {LOCAL_ENV}): no such folder or file", EXIT_UNREACHABLE)
    if not folder.is_dir():
        raise DataStepError(
            f"local copy '{folder}' (--local / {LOCAL_ENV}): not a folder or a regular file", EXIT_USAGE
        )
    for c in local_candidates(ds, folder):
        if c.is_file():
            return open(c, "rb"), str(c)
    tried = " or ".join(f"'{c}'" for c in local_candidates(ds, folder))
    raise DataStepError(f"local copy folder '{folder}': no {ds.name} copy at {tried}", EXIT_UNREACHABLE)


def open_url(ds: Dataset, url: str, timeout: float) -> tuple[BinaryIO, str]:
    hint = (
        f"on a machine without internet, point --local DIR (or {LOCAL_ENV}=DIR) at a folder holding "
        f"{ds.rel_path}"
    )
    try:
        resp = urllib.request.urlopen(url, timeout=timeout)
    except (urllib.error.URLError, socket.timeout, TimeoutError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DataStepError(f"could not download {url} within {timeout:g} s ({reason}); {hint}", EXIT_UNREACHABLE)
    return resp, url


def copy_stream(src: BinaryIO, dst: BinaryIO, limit: int, what: str, timeout_hint: str) -> None:
    """Copies at most `limit` + 1 bytes (a longer source fails the size check without filling the disk)."""
    left = limit + 1
    try:
        while left > 0:
            block = src.read(min(CHUNK, left))
            if not block:
                break
            dst.write(block)
            left -= len(block)
    except (socket.timeout, TimeoutError, OSError) as e:
        if isinstance(e, (socket.timeout, TimeoutError)) or "timed out" in str(e):
            raise DataStepError(f"{what}: the transfer stalled ({e}); {timeout_hint}", EXIT_UNREACHABLE)
        raise


def fetch(
    ds: Dataset,
    dest_root: Path,
    local: Optional[Path] = None,
    url: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    say: Callable[[str], None] = print,
    force: bool = False,
) -> Path:
    """Brings `ds` to dest_root/ds.dest, checked; returns its path. A file already there is
    checked again and kept when it passes; when it fails it is kept too (it may be someone's own
    edit) and the error (EXIT_CHECK) says so and how to replace it: with force, a verified copy
    replaces it, and if none can be had the error says the failing file was kept. A destination that is a folder is
    EXIT_USAGE. Nothing half-written is ever at the final path: the
    bytes go to a temporary file beside it, which is checked, synced and renamed into place; a
    fetch that fails leaves no folder it made."""
    final = dest_root / ds.dest
    if final.exists() and not final.is_file():
        raise DataStepError(
            f"destination '{final}' is a folder or another non-file; move it away, or choose another "
            "destination root with --dest",
            EXIT_USAGE,
        )
    if final.exists():
        try:
            check_file(ds, final, str(final))
            say(f"{ds.name}: {final} is already there, {ds.size:,} bytes, SHA-256 OK")
            return final
        except DataStepError as e:
            if not force:
                raise DataStepError(
                    f"{e}; KEPT the file already at '{final}' (it may be your own edit; a run on it warns and says "
                    "so in summary.json, data_check): to replace it with a verified copy, move it away or pass "
                    "--force",
                    e.code,
                )
            say(f"{ds.name}: the file already there fails its check, fetching a copy to replace it (--force): {e}")
        try:
            return bring(ds, final, local, url, timeout, say)
        except DataStepError as e:
            # The failing file stays (it may be someone's own edit); a run on it is flagged.
            raise DataStepError(
                f"{e}; KEPT the file already at '{final}', which fails its check, because nothing "
                "verified replaced it: a run on it warns and says so in summary.json (data_check)",
                e.code,
            )
    return bring(ds, final, local, url, timeout, say)


def bring(
    ds: Dataset,
    final: Path,
    local: Optional[Path],
    url: Optional[str],
    timeout: float,
    say: Callable[[str], None],
) -> Path:
    """fetch's copy: from the local copy or the URL to a temporary file, checked, renamed to `final`.
    The folders it makes for `final` are removed again when it fails (a failed copy left an empty
    data/shakespeare_char/ behind)."""
    made = [p for p in (final.parent, *final.parent.parents) if not p.exists()]  # deepest first
    if local is not None:
        src, origin = open_local(ds, local)
        say(f"{ds.name}: copying the local copy {origin}")
    else:
        src, origin = open_url(ds, url or ds.url, timeout)
        say(f"{ds.name}: downloading {origin}")
    try:  # the folder is made only once the source answered: a failed fetch leaves nothing behind
        final.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(final.parent, os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as e:
        src.close()
        remove_empty(made)
        raise DataStepError(
            f"cannot write to '{final.parent}': {e.strerror or e}; choose another folder with --dest", EXIT_USAGE
        )
    tmp = final.parent / f".{final.name}.partial-{os.getpid()}"
    done = False
    try:
        with src, open(tmp, "wb") as out:
            copy_stream(src, out, ds.size, origin, f"try again, or use --local DIR (or {LOCAL_ENV}=DIR)")
            out.flush()
            os.fsync(out.fileno())
        check_file(ds, tmp, origin)
        os.replace(tmp, final)
        done = True
    except OSError as e:
        raise DataStepError(f"cannot write '{tmp}': {e.strerror or e}; choose another folder with --dest", EXIT_USAGE)
    finally:
        if tmp.exists():
            tmp.unlink()
        if not done:
            remove_empty(made)
    say(f"{ds.name}: {final}, {ds.size:,} bytes, SHA-256 OK, {ds.distinct_chars} distinct characters")
    return final


def remove_empty(folders: list[Path]) -> None:
    """Removes each folder (deepest first) while it is empty: the ones a failed copy made."""
    for p in folders:
        try:
            p.rmdir()
        except OSError:
            return


def main(argv: Optional[list[str]] = None) -> int:
    names = ", ".join(DATASETS)
    ap = argparse.ArgumentParser(
        prog="get_data.py",
        description="Fetches an outside data set from its public source, or copies it from a local folder, "
        "into a git-ignored folder under data/, and checks its size and SHA-256.",
        epilog=f"Data sets: {names}. On a machine without internet (CI, a cluster's compute nodes) name a folder "
        f"holding a copy with --local DIR or {LOCAL_ENV}=DIR; a copy is looked for as DIR/<source layout> "
        "(tinyshakespeare/input.txt) and then DIR/input.txt; DIR may also be the file itself. A file already at "
        "the destination that fails its check (an edit of yours?) is kept and said so (exit 1); with --force a "
        "verified copy replaces it, or it is kept (and said so) when none can be had. Exit codes: 0 done, 1 a "
        "check failed, "
        "2 bad usage or unwritable folder, 3 source unreachable.",
    )
    ap.add_argument("name", nargs="?", default="shakespeare_char", help=f"the data set ({names}; default %(default)s)")
    ap.add_argument(
        "--local",
        metavar="DIR",
        help=f"copy from this folder (or this file) instead of downloading (env {LOCAL_ENV})",
    )
    ap.add_argument("--dest", metavar="DIR", help="the destination root (default: the repository's data/)")
    ap.add_argument("--url", help="download from this URL instead of the public source (a mirror)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds before giving up (%(default)s)")
    ap.add_argument("--list", action="store_true", help="list the data sets and where each goes, then exit")
    ap.add_argument("--force", action="store_true",
                    help="replace a file already at the destination that fails its check (kept without it)")
    args = ap.parse_args(argv)

    dest_root = Path(args.dest) if args.dest else repo_data_dir()
    if args.list:
        for d in DATASETS.values():
            print(f"{d.name}: {dest_root / d.dest} ({d.size:,} bytes, sha256 {d.sha256}) from {d.url}; {d.about}")
        return 0
    ds = DATASETS.get(args.name)
    if ds is None:
        print(f"get_data.py: unknown data set '{args.name}'; the data sets are: {names}", file=sys.stderr)
        return EXIT_USAGE
    if not args.timeout > 0:
        print(f"get_data.py: --timeout must be > 0, got {args.timeout:g}", file=sys.stderr)
        return EXIT_USAGE
    local = args.local if args.local is not None else os.environ.get(LOCAL_ENV) or None
    if local is not None and args.url:
        print("get_data.py: --url and a local copy (--local or " + LOCAL_ENV + ") do not combine", file=sys.stderr)
        return EXIT_USAGE
    try:
        fetch(ds, dest_root, Path(local) if local else None, args.url, args.timeout, force=args.force)
    except DataStepError as e:
        print(f"get_data.py: {ds.name}: {e}", file=sys.stderr)
        return e.code
    except OSError as e:  # a file or folder it cannot read or write that no check above foresaw
        where = f"'{e.filename}'" if e.filename else "a file"
        print(f"get_data.py: {ds.name}: cannot use {where}: {e.strerror or e}; choose another folder with --dest "
              "or --local", file=sys.stderr)
        return EXIT_USAGE
    return 0
