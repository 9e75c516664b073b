"""Bytes a node fetched from the harness's mirrors, read from their logs (here.boot.fetched) as http.server writes
them: the log lines come from a real http.server answering real requests."""

from __future__ import annotations

import contextlib
import io
import threading
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from here.boot import fetched


def test_each_client_is_counted_the_files_it_was_served(tmp_path):
    root = tmp_path / "simple"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "torch-2.13.0+cpu-cp311-none-any.whl").write_bytes(b"w" * 3000)
    (root / "numpy").mkdir()
    (root / "numpy" / "index.html").write_bytes(b"<a>numpy</a>")
    log = tmp_path / "pypi.log"
    stderr = io.StringIO()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with contextlib.redirect_stderr(stderr):
        for path in ("/torch/torch-2.13.0%2Bcpu-cp311-none-any.whl", "/numpy/", "/torch/", "/missing.whl"):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(base + path).read()
        server.shutdown()
    log.write_text(stderr.getvalue())

    assert fetched.by_address({log: root}) == {"127.0.0.1": 3000 + len(b"<a>numpy</a>")}
    assert fetched.by_address({tmp_path / "none.log": root}) == {}
