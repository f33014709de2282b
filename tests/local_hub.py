"""A minimal Hugging Face hub on 127.0.0.1 that serves one folder as one model repo, for download tests.

It answers the four requests that huggingface_hub's `snapshot_download` makes (read from
huggingface_hub 2.4's `_snapshot_download.py`, `hf_api.py` and `file_download.py`):

- `GET /api/models/<repo>/revision/<rev>`: the repo's info; `sha` is the commit to fetch;
- `GET /api/models/<repo>/tree/<commit>?recursive=...`: every file with its size and id
  (`lfs` with the sha256 for .safetensors, as the hub lists large files);
- `HEAD /<repo>/resolve/<commit>/<file>`: the file's commit, ETag and size;
- `GET /<repo>/resolve/<commit>/<file>`: the bytes, honouring `Range: bytes=N-` (a resumed download).

`chunk_delay` seconds between 64 kB chunks make it a slow hub. `cut_after` makes it a broken hub: every GET of a .safetensors file sends its headers and that
many bytes, then drops the connection; a resumed request is dropped before any answer. Set it
to None and the same hub is healthy again. Point `HF_ENDPOINT` at `url` (before huggingface_hub
is imported: it reads the variable once) and `HF_HOME` at a temporary folder.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # the one revision this hub has
CHUNK = 1 << 16


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class LocalHub:
    """Serves `folder` as the model repo `repo_id` on a free port of 127.0.0.1, in a daemon thread."""

    def __init__(
        self, folder: Path, repo_id: str = "local/tiny-qwen3", cut_after: int | None = None, chunk_delay: float = 0.0
    ):
        self.repo_id, self.cut_after, self.chunk_delay = repo_id, cut_after, chunk_delay
        self.files = {p.name: p for p in sorted(Path(folder).iterdir()) if p.is_file()}
        self.ids = {}
        for name, path in self.files.items():
            data = path.read_bytes()
            self.ids[name] = (git_blob_id(data), hashlib.sha256(data).hexdigest(), len(data))
        self.requests: list[str] = []  # "METHOD path" of every request, for a test to read
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="local hub")

    def __enter__(self) -> LocalHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- what each endpoint answers ---------------------------------------------------------
    def tree(self) -> list[dict]:
        entries = []
        for name, (blob, sha256, size) in self.ids.items():
            entry = {"type": "file", "path": name, "size": size, "oid": blob}
            if name.endswith(".safetensors"):
                entry["lfs"] = {"oid": sha256, "size": size, "pointerSize": 134}
            entries.append(entry)
        return entries

    def info(self) -> dict:
        return {"id": self.repo_id, "sha": COMMIT, "private": False, "siblings": [{"rfilename": n} for n in self.files]}

    def etag(self, name: str) -> str:
        blob, sha256, _ = self.ids[name]
        return sha256 if name.endswith(".safetensors") else blob

    def _handler(self):
        hub = self
        repo = re.escape(self.repo_id)
        api = re.compile(rf"^/api/models/{repo}/(revision|tree)/([^/]+)$")
        resolve = re.compile(rf"^/{repo}/resolve/([^/]+)/(.+)$")

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the test output quiet
                pass

            def send_json(self, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def not_found(self) -> None:
                data = b'{"error": "Repository Not Found"}'
                self.send_response(404)
                self.send_header("X-Error-Code", "RepoNotFound")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.answer(head=False)

            def do_HEAD(self) -> None:
                self.answer(head=True)

            def answer(self, head: bool) -> None:
                path = unquote(urlparse(self.path).path)
                hub.requests.append(f"{self.command} {path}")
                if (m := api.match(path)) and not head:
                    self.send_json(hub.info() if m.group(1) == "revision" else hub.tree())
                elif (m := resolve.match(path)) and m.group(2) in hub.files:
                    self.send_file(m.group(2), head)
                else:
                    self.not_found()

            def send_file(self, name: str, head: bool) -> None:
                data = hub.files[name].read_bytes()
                start = 0
                wanted = re.match(r"bytes=(\d+)-$", self.headers.get("Range", ""))
                broken = hub.cut_after is not None and name.endswith(".safetensors") and not head
                if broken and wanted:
                    self.close_connection = True  # a resumed download of a broken file: no answer at all
                    return
                if wanted and not head:
                    start = min(int(wanted.group(1)), len(data))
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{hub.etag(name)}"')
                if name.endswith(".safetensors"):
                    self.send_header("X-Linked-Etag", f'"{hub.etag(name)}"')
                    self.send_header("X-Linked-Size", str(len(data)))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                if head:
                    return
                body = data[start:] if not broken else data[: hub.cut_after]
                for offset in range(0, len(body), CHUNK):
                    self.wfile.write(body[offset : offset + CHUNK])
                    if hub.chunk_delay:
                        time.sleep(hub.chunk_delay)  # a slow network, so that a test can watch a download
                if broken:
                    self.wfile.flush()
                    self.close_connection = True  # the rest never comes: the client sees a cut connection

        return Handler
