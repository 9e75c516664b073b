"""A fake instance-metadata endpoint per node: the spot notice path answers 404 until a notice is injected.

Run as `python -m here.local.metadata DIR ADDRESS NODE=PORT...` inside the bridge namespace: one listener per
node on the bridge's address, each answering from the file DIR/NODE (present = notice set). Injecting or clearing a
notice is writing or removing that file, so `fleet`, tests and the server share no memory.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from pathlib import Path

BASE_PORT = 8000


def port(index: int) -> int:
    return BASE_PORT + index


def inject(notices: Path, node: str, warning_s: float, action: str = "terminate") -> None:
    """Set the node's spot notice the way AWS words it: the action and when it happens."""
    notices.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + warning_s))
    (notices / node).write_text(json.dumps({"action": action, "time": when}))


def clear(notices: Path, node: str) -> None:
    (notices / node).unlink(missing_ok=True)


def _handler(notice: Path) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = notice.read_bytes() if notice.is_file() else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self) -> None:
            """No IMDSv2 token service here: a local plan never asks for one."""
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    return Handler


def serve(notices: Path, address: str, nodes: dict[str, int]) -> None:
    servers = [http.server.ThreadingHTTPServer((address, p), _handler(notices / name)) for name, p in nodes.items()]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    print("ready", flush=True)
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    directory, listen, *pairs = sys.argv[1:]
    serve(Path(directory), listen, {name: int(p) for name, p in (pair.split("=") for pair in pairs)})
