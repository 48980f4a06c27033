"""The data step (stacklab/runs/datasets.py): a good copy lands checked, a bad one never lands.

Fabricated data sets (a few KB with their own checksum) stand in for tiny Shakespeare, served
from a local folder or from an HTTP server on the loopback; the real file is checked when the
local copy that CI has is there (in CI it must be).
"""
import contextlib
import hashlib
import http.server
import io
import os
import socket
import tempfile
import threading
import time
import unittest
from pathlib import Path

from stacklab.runs import datasets
from stacklab.runs.datasets import Dataset, DataStepError

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 40).encode()


def fake_dataset(data: bytes = TEXT) -> Dataset:
    return Dataset(name="fake", url="http://127.0.0.1:9/none", rel_path="fake/input.txt",
                   dest="fake_char/input.txt", size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                   distinct_chars=len(set(data.decode())), about="fabricated")


def quiet(_msg: str) -> None:
    pass


class Server:
    """An HTTP server on 127.0.0.1 serving `body` at every path, or one that accepts and never answers."""

    def __init__(self, body: bytes = b"", silent: bool = False):
        if silent:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(1)
            self.port = self.sock.getsockname()[1]
            self.httpd = None
            return
        payload = body

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the name http.server calls)
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/input.txt"

    def close(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
        else:
            self.sock.close()


class DataStepTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.dest = self.tmp / "data"
        self.local = self.tmp / "shared"
        self.ds = fake_dataset()

    def put_local(self, data: bytes) -> Path:
        p = self.local / self.ds.rel_path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p

    def final(self) -> Path:
        return self.dest / self.ds.dest

    def assert_nothing_left(self):
        """Not even the folder: a failed copy left an empty data/shakespeare_char/ (issue 48 item 11)."""
        folder = self.final().parent
        left = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
        self.assertEqual(left, [], "a failed fetch must leave nothing where a training reads")
        self.assertFalse(folder.exists(), f"a failed fetch left the folder {folder} it made")
        self.assertFalse(self.dest.exists(), f"a failed fetch left the folder {self.dest} it made")

    def test_a_good_local_copy_lands_checked_and_says_where(self):
        self.put_local(TEXT)
        said = []
        path = datasets.fetch(self.ds, self.dest, local=self.local, say=said.append)
        self.assertEqual(path, self.final())
        self.assertEqual(path.read_bytes(), TEXT)
        self.assertIn(str(self.final()), said[-1])
        self.assertIn("SHA-256 OK", said[-1])

    def test_a_copy_in_the_bare_folder_is_found_too(self):
        (self.local).mkdir(parents=True)
        (self.local / "input.txt").write_bytes(TEXT)
        self.assertEqual(datasets.fetch(self.ds, self.dest, local=self.local, say=quiet).read_bytes(), TEXT)

    def test_a_wrong_checksum_prints_both_and_lands_nothing(self):
        bad = TEXT.replace(b"speak", b"speek", 1)
        self.put_local(bad)
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        msg = str(cm.exception)
        self.assertEqual(cm.exception.code, datasets.EXIT_CHECK)
        self.assertIn(hashlib.sha256(bad).hexdigest(), msg)
        self.assertIn(self.ds.sha256, msg)
        self.assert_nothing_left()

    def test_a_truncated_file_is_named_truncated_and_lands_nothing(self):
        self.put_local(TEXT[: len(TEXT) // 2])
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        self.assertIn("(truncated)", str(cm.exception))
        self.assertIn(f"{len(TEXT) // 2:,} bytes", str(cm.exception))
        self.assert_nothing_left()

    def test_a_longer_file_fails_its_size_check(self):
        self.put_local(TEXT + b"extra")
        with self.assertRaises(DataStepError):
            datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        self.assert_nothing_left()

    def test_a_local_folder_without_the_file_names_where_it_looked(self):
        self.local.mkdir()
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        self.assertEqual(cm.exception.code, datasets.EXIT_UNREACHABLE)
        self.assertIn(str(self.local / self.ds.rel_path), str(cm.exception))

    def test_a_download_from_a_loopback_server_lands_checked(self):
        srv = Server(TEXT)
        try:
            path = datasets.fetch(self.ds, self.dest, url=srv.url, timeout=10, say=quiet)
        finally:
            srv.close()
        self.assertEqual(path.read_bytes(), TEXT)

    def test_a_download_with_the_wrong_bytes_lands_nothing(self):
        srv = Server(TEXT[:100])
        try:
            with self.assertRaises(DataStepError) as cm:
                datasets.fetch(self.ds, self.dest, url=srv.url, timeout=10, say=quiet)
        finally:
            srv.close()
        self.assertIn("(truncated)", str(cm.exception))
        self.assert_nothing_left()

    def test_no_network_fails_within_the_time_limit_naming_the_local_copy_option(self):
        srv = Server(silent=True)  # accepts the connection, never answers: a hang without a limit
        t0 = time.monotonic()
        try:
            with self.assertRaises(DataStepError) as cm:
                datasets.fetch(self.ds, self.dest, url=srv.url, timeout=0.5, say=quiet)
        finally:
            srv.close()
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(cm.exception.code, datasets.EXIT_UNREACHABLE)
        self.assertIn("--local DIR", str(cm.exception))
        self.assertIn(datasets.LOCAL_ENV, str(cm.exception))
        self.assertFalse(self.dest.exists(), "a fetch that never reached its source makes no folder")

    def test_a_refused_connection_names_the_local_copy_option(self):
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, url=f"http://127.0.0.1:{port}/x", timeout=5, say=quiet)
        self.assertIn("--local DIR", str(cm.exception))

    def test_an_unwritable_destination_names_the_folder(self):
        self.put_local(TEXT)
        blocker = self.tmp / "a_file"
        blocker.write_text("not a folder")  # a folder below a file cannot be made, even by root
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, blocker, local=self.local, say=quiet)
        self.assertEqual(cm.exception.code, datasets.EXIT_USAGE)
        self.assertIn(str(blocker), str(cm.exception))
        self.assertIn("--dest", str(cm.exception))

    def test_a_good_file_already_there_is_kept_and_a_bad_one_replaced_with_force(self):
        self.put_local(TEXT)
        datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        said = []
        datasets.fetch(self.ds, self.dest, local=None, url="http://127.0.0.1:9/x", say=said.append)
        self.assertIn("already there", said[0])  # no download tried: the URL is unreachable
        self.final().write_bytes(b"damaged")
        said = []
        datasets.fetch(self.ds, self.dest, local=self.local, say=said.append, force=True)
        self.assertIn("fails its check", said[0])
        self.assertIn("replace it (--force)", said[0])
        self.assertEqual(self.final().read_bytes(), TEXT)

    # Pins issue 48 item 12: a user-edited input.txt was replaced by the verified copy without a word
    # beforehand, the edit lost.
    def test_an_edited_file_is_kept_without_force_and_the_error_says_how_to_replace_it(self):
        self.put_local(TEXT)
        datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        edited = TEXT.replace(b"speak", b"SPEAK", 1)
        self.final().write_bytes(edited)
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=self.local, say=quiet)
        self.assertEqual(cm.exception.code, datasets.EXIT_CHECK)
        self.assertIn(f"KEPT the file already at '{self.final()}' (it may be your own edit", str(cm.exception))
        self.assertIn("--force", str(cm.exception))
        self.assertEqual(self.final().read_bytes(), edited)
        self.assertEqual(sorted(p.name for p in self.final().parent.iterdir()), [self.final().name])
        real = datasets.DATASETS["shakespeare_char"]  # the command line: exit 1 and kept, --force replaces
        mine = self.dest / real.dest
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_bytes(b"my own edit")
        with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
            rc = datasets.main(["--local", str(self.local), "--dest", str(self.dest)])
        self.assertEqual(rc, datasets.EXIT_CHECK)
        self.assertIn("KEPT", err.getvalue())
        self.assertEqual(mine.read_bytes(), b"my own edit")

    def test_a_failing_file_that_nothing_verified_replaces_is_kept_and_the_error_says_so(self):
        self.final().parent.mkdir(parents=True)
        self.final().write_bytes(TEXT[:100])  # truncated
        self.put_local(TEXT.replace(b"speak", b"speek", 1))  # a bad local copy: exit 1
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=self.local, say=quiet, force=True)
        self.assertEqual(cm.exception.code, datasets.EXIT_CHECK)
        self.assertIn(f"KEPT the file already at '{self.final()}'", str(cm.exception))
        self.assertIn("data_check", str(cm.exception))
        self.assertEqual(self.final().read_bytes(), TEXT[:100])
        with self.assertRaises(DataStepError) as cm:  # no source at all: exit 3, same words
            datasets.fetch(self.ds, self.dest, url="http://127.0.0.1:9/x", timeout=2, say=quiet, force=True)
        self.assertEqual(cm.exception.code, datasets.EXIT_UNREACHABLE)
        self.assertIn("KEPT", str(cm.exception))

    def test_a_destination_that_is_a_folder_is_usage_exit_2_naming_it_without_a_traceback(self):
        real = datasets.DATASETS["shakespeare_char"]
        blocked = self.dest / real.dest
        blocked.mkdir(parents=True)
        self.local.mkdir()
        with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
            rc = datasets.main(["--local", str(self.local), "--dest", str(self.dest)])
        self.assertEqual(rc, datasets.EXIT_USAGE)
        self.assertIn(f"destination '{blocked}' is a folder", err.getvalue())
        self.assertNotIn("Traceback", err.getvalue())

    def test_local_may_name_the_file_itself(self):
        copy = self.put_local(TEXT)
        self.assertEqual(datasets.fetch(self.ds, self.dest, local=copy, say=quiet).read_bytes(), TEXT)

    def test_a_local_path_that_does_not_exist_is_unreachable_and_a_non_file_is_usage(self):
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=self.tmp / "nowhere", say=quiet)
        self.assertEqual(cm.exception.code, datasets.EXIT_UNREACHABLE)
        self.assertIn("nowhere", str(cm.exception))
        with self.assertRaises(DataStepError) as cm:
            datasets.fetch(self.ds, self.dest, local=Path("/dev/null"), say=quiet)
        self.assertEqual(cm.exception.code, datasets.EXIT_USAGE)

    def test_main_exit_codes_and_the_environment_variable(self):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(datasets.main(["no_such_set", "--dest", str(self.dest)]), datasets.EXIT_USAGE)
        self.assertIn("shakespeare_char", err.getvalue())
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(datasets.main(["--timeout", "0"]), datasets.EXIT_USAGE)
        # An empty local folder named by the environment: exit 3, the message names the folder.
        self.local.mkdir()
        old = os.environ.get(datasets.LOCAL_ENV)
        os.environ[datasets.LOCAL_ENV] = str(self.local)
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                rc = datasets.main(["--dest", str(self.dest)])
        finally:
            if old is None:
                del os.environ[datasets.LOCAL_ENV]
            else:
                os.environ[datasets.LOCAL_ENV] = old
        self.assertEqual(rc, datasets.EXIT_UNREACHABLE)
        self.assertIn(str(self.local), err.getvalue())


class ManifestTest(unittest.TestCase):
    """data/datasets.json is the one list of data sets: the data step and the binary read it."""

    def test_the_data_sets_come_from_the_manifest_the_binary_compiles_in(self):
        path = datasets.repo_data_dir() / "datasets.json"
        self.assertEqual(datasets.load_manifest(path), datasets.DATASETS)
        self.assertIn("shakespeare_char", datasets.DATASETS)

    def test_a_malformed_manifest_is_an_error_naming_the_file_and_the_entry(self):
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "datasets.json"
            bad.write_text('{"format": "stacklab.datasets", "version": 1, "datasets": [{"name": "x"}]}')
            with self.assertRaises(ValueError) as cm:
                datasets.load_manifest(bad)
            self.assertIn(str(bad), str(cm.exception))
            self.assertIn("datasets[0]", str(cm.exception))


class RealTextTest(unittest.TestCase):
    """The registry's tiny Shakespeare from the local copy CI has (../shared/data from the repo root)."""

    def test_the_local_copy_passes_the_registry_check_with_65_characters(self):
        shared = Path(os.environ.get(datasets.LOCAL_ENV) or Path(__file__).resolve().parents[2] / "../shared/data")
        ds = datasets.DATASETS["shakespeare_char"]
        if not any(p.is_file() for p in datasets.local_candidates(ds, shared)):
            if os.environ.get("CI"):
                self.fail(f"CI has no copy of tiny Shakespeare in {shared} ({datasets.LOCAL_ENV})")
            self.skipTest(f"no copy of tiny Shakespeare in {shared}; set {datasets.LOCAL_ENV}")
        with tempfile.TemporaryDirectory() as d:
            path = datasets.fetch(ds, Path(d), local=shared, say=quiet)
            text = path.read_text(encoding="utf-8")
        self.assertEqual(len(set(text)), 65)
        self.assertEqual(ds.size, 1_115_394)


if __name__ == "__main__":
    unittest.main()
