"""A small Hugging Face hub on 127.0.0.1 for download tests (point `HF_ENDPOINT` at `.endpoint`).

It answers what huggingface_hub 2.4 asks when it fetches one file (see `get_hf_file_metadata`
and `http_get` in huggingface_hub/file_download.py):

- `HEAD|GET /{org}/{repo}/resolve/{revision}/{file}` on the hub: for an LFS file, a 302 to a CDN
  on another origin, with `X-Repo-Commit`, `X-Linked-Etag` (the quoted sha256), `X-Linked-Size`
  and the pointer's own `ETag`, as the real hub does; errors carry `X-Error-Code`
  (`RepoNotFound` with 401, `RevisionNotFound` / `EntryNotFound` with 404), which
  huggingface_hub turns into its typed errors.
- `GET /blobs/{sha256}` on the CDN (a second server, so a different origin, like the real CDN):
  the bytes, with `Range: bytes=N-` answered by 206 + `Content-Range`.

Faults, per file: drop the connection after N body bytes (`drop_after`, `drops` times), stall
after N bytes until `release` is set (`stall_after`), serve damaged bytes of the right length
(`corrupt`), advertise a size other than the real one (`advertised_size`), and run a hook when a
GET starts (`on_get`, e.g. to fill the disk). Every request is logged in `requests`.
"""

from __future__ import annotations

import hashlib
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class HubFile:
    repo: str
    filename: str
    content: bytes
    revision: str = "main"
    drop_after: int | None = None
    drops: int = 1
    stall_after: int | None = None
    corrupt: bool = False
    advertised_size: int | None = None
    on_get: Callable[[], None] | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def commit(self) -> str:
        return hashlib.sha1(f"{self.repo}@{self.revision}".encode()).hexdigest()

    @property
    def pointer_etag(self) -> str:
        # An LFS pointer's git blob id: the ETag the hub sends next to X-Linked-Etag.
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.content)}\n"
        return hashlib.sha1(f"blob {len(pointer)}\0{pointer}".encode()).hexdigest()


@dataclass
class Request:
    server: str  # "hub" or "cdn"
    method: str
    path: str
    range: str | None
    authorization: str | None = None
    sent: int = 0  # body bytes written


@dataclass
class HubServer:
    files: list[HubFile]
    requests: list[Request] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> HubServer:
        self._hub = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, "hub"))
        self._cdn = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, "cdn"))
        for server in (self._hub, self._cdn):
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        for server in (self._hub, self._cdn):
            server.shutdown()
            server.server_close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._hub.server_address[1]}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._cdn.server_address[1]}"

    def cdn_gets(self) -> list[Request]:
        return [r for r in self.requests if r.server == "cdn" and r.method == "GET"]


_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<filename>.+)$")
_BLOB = re.compile(r"^/blobs/(?P<sha>[0-9a-f]{64})$")
_RANGE = re.compile(r"^bytes=(\d+)-$")


def _handler(hub: HubServer, role: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            record = Request(role, self.command, self.path.split("?")[0], self.headers.get("Range"), self.headers.get("Authorization"))
            hub.requests.append(record)
            if role == "hub":
                self._resolve(record)
            else:
                self._blob(record, body=body)

        def _resolve(self, record: Request) -> None:
            match = _RESOLVE.match(record.path)
            if not match:
                return self._error(404, None, "Not found")
            repo, revision, filename = match["repo"], match["revision"], match["filename"]
            in_repo = [f for f in hub.files if f.repo == repo]
            if not in_repo:
                return self._error(401, "RepoNotFound", "Repository not found")
            at_revision = [f for f in in_repo if revision in (f.revision, f.commit)]
            if not at_revision:
                return self._error(404, "RevisionNotFound", "Invalid rev id")
            file = next((f for f in at_revision if f.filename == filename), None)
            if file is None:
                return self._error(404, "EntryNotFound", "Entry not found", commit=at_revision[0].commit)
            self.send_response(302)
            self.send_header("Location", f"{hub.cdn}/blobs/{file.sha256}?download=true")
            self.send_header("X-Repo-Commit", file.commit)
            self.send_header("ETag", f'"{file.pointer_etag}"')
            self.send_header("X-Linked-Etag", f'"{file.sha256}"')
            self.send_header("X-Linked-Size", str(file.advertised_size or len(file.content)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _error(self, status: int, code: str | None, message: str, commit: str | None = None) -> None:
            self.send_response(status)
            if code:
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
            if commit:
                self.send_header("X-Repo-Commit", commit)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _blob(self, record: Request, *, body: bool) -> None:
            match = _BLOB.match(record.path)
            file = next((f for f in hub.files if match and f.sha256 == match["sha"]), None)
            if file is None:
                return self._error(404, None, "Not found")
            if body and file.on_get:
                file.on_get()
            content = file.content
            if file.corrupt:
                damaged = bytearray(content)  # same length, a few bytes flipped: only a checksum notices
                for i in range(100, len(damaged), 4096):
                    damaged[i] ^= 0xFF
                content = bytes(damaged)
            start = 0
            ranged = _RANGE.match(record.range or "")
            if ranged:
                start = int(ranged[1])
            total = len(content)
            self.send_response(206 if ranged else 200)
            if ranged:
                self.send_header("Content-Range", f"bytes {start}-{total - 1}/{total}")
            self.send_header("Content-Length", str(total - start))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if body:
                self._send(record, file, content[start:])

        def _send(self, record: Request, file: HubFile, payload: bytes) -> None:
            cut = None
            if file.drop_after is not None and file.drops > 0:
                file.drops -= 1
                cut = file.drop_after
            stall = file.stall_after
            file.stall_after = None  # stall once
            try:
                if stall is not None:
                    self._write(record, payload[:stall])
                    hub.release.wait()  # set by the test, or by __exit__
                    payload = payload[stall:]
                if cut is not None:
                    self._write(record, payload[:cut])
                    self.connection.shutdown(socket.SHUT_RDWR)  # the client sees a short body
                    self.close_connection = True
                    return
                self._write(record, payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (Ctrl+C): nothing to do

        def _write(self, record: Request, data: bytes) -> None:
            for offset in range(0, len(data), 1 << 20):
                chunk = data[offset : offset + (1 << 20)]
                self.wfile.write(chunk)
                record.sent += len(chunk)
            self.wfile.flush()

    return Handler
