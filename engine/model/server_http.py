"""One request to an OpenAI-compatible server, which is as untrusted as any input.

Its reply is streamed with a byte cap sized to what was asked (engine/model/remote.py's
`reply_bytes`: a token with its 20 alternatives is a few hundred bytes); the whole request has one
deadline (the engine's timeout, QWEN_ENGINE_TIMEOUT) enforced by shutting its socket, so a server
that drips a byte at a time cannot hold it past it; an error body is read to 1 KiB; and an answer
that is not a JSON object, or holds NaN, infinities or numbers too large for a float, is refused.

Only the standard library (urllib) is used; every failure is a `RemoteError` of one line.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.request

from ..errors import EngineError

MODELS_BYTES = 1024 * 1024  # the most a model list may take
ERROR_BYTES = 1024  # the most of an error's body that is read (300 characters of it are shown)


class RemoteError(EngineError):
    """The server could not be reached, was too slow, or answered something the page cannot use."""


class Deadline:
    """One request's deadline: a timer shuts the request's sockets when it passes.

    A socket's timeout bounds each read, not the request: a server sending a byte a second never
    trips it. Shutting the socket from the timer ends whatever read is waiting, headers included."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return max(self.ends - time.monotonic(), 0.01)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


def _opener(deadline: Deadline):
    """A urllib opener (proxies and all) whose connections hand their socket to `deadline` once connected."""

    def watched(base):
        class Watched(base):
            def connect(self):
                super().connect()
                deadline.watch(self.sock)

        return Watched

    class Plain(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(watched(http.client.HTTPConnection), req)

    class Secure(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(watched(http.client.HTTPSConnection), req, context=self._context)

    return urllib.request.build_opener(Plain(), Secure())


def _read_capped(answer, most: int, url: str, path: str) -> bytes:
    """The body of `answer`, read as it arrives; RemoteError past `most` bytes (nothing more is read)."""
    too_long = (
        f"the server at {url} sent more than {most:,} bytes for {path}, far more than the request asks for: "
        "it is not answering as an OpenAI-compatible server would; check QWEN_ENGINE_URL"
    )
    stated = answer.headers.get("Content-Length")
    if stated and stated.strip().isdigit() and int(stated) > most:
        raise RemoteError(too_long)
    body = bytearray()
    while chunk := answer.read1(64 * 1024):
        body += chunk
        if len(body) > most:
            raise RemoteError(too_long)
    if getattr(answer, "length", None):  # fewer bytes came than its Content-Length said
        raise RemoteError(f"the connection to the server at {url} was cut during {path}, {answer.length:,} bytes short")
    return bytes(body)


def _refuse_constant(name: str):
    raise ValueError(f"{name}, which JSON has no word for")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]}, too large for a number")
    return value


def call_server(
    url: str, path: str, body: dict | None, timeout: float, most: int = MODELS_BYTES, deadline: Deadline | None = None
) -> dict:
    """GET (body None) or POST JSON to the server; the JSON object it answers, or RemoteError in one line.

    The whole request, headers and body, ends within `timeout` seconds (or at `deadline`, shared by
    the requests of one turn); the body is read to at most `most` bytes."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(f"{url}{path}", data=data, headers={"Content-Type": "application/json"})
    owned = deadline is None
    deadline = deadline or Deadline(timeout)
    late = (
        f"the server at {url} did not answer {path} within {deadline.seconds:.0f} s; it may be overloaded "
        "or still loading its model (QWEN_ENGINE_TIMEOUT sets how long a request may take)"
    )
    try:
        with _opener(deadline).open(request, timeout=min(timeout, deadline.left())) as answer:
            text = _read_capped(answer, most, url, path)
        if deadline.expired:  # the socket was shut mid-reply: what came is cut short
            raise RemoteError(late)
    except urllib.error.HTTPError as error:
        try:
            detail = error.read(ERROR_BYTES)[:300].decode("utf-8", "replace").replace("\n", " ")
        except (OSError, http.client.HTTPException):
            detail = ""
        finally:
            error.close()
        if deadline.expired:
            raise RemoteError(late) from error
        raise RemoteError(f"the server at {url} answered {path} with HTTP {error.code}: {detail}") from error
    except RemoteError:
        raise
    except TimeoutError as error:
        raise RemoteError(late) from error
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError) or deadline.expired:
            raise RemoteError(late) from error
        raise RemoteError(
            f"cannot reach the server at {url}: {reason}. Is it running, and is QWEN_ENGINE_URL right?"
        ) from error
    except (OSError, http.client.HTTPException) as error:
        if deadline.expired:
            raise RemoteError(late) from error
        # (RemoteDisconnected is both: a connection cut before a status line)
        if not isinstance(error, OSError | http.client.IncompleteRead):
            raise RemoteError(
                f"the server at {url} answered {path} with something that is not HTTP ({type(error).__name__}); "
                "is QWEN_ENGINE_URL the address of an OpenAI-compatible server?"
            ) from error
        raise RemoteError(f"the connection to the server at {url} was cut during {path}: {error}") from error
    except ValueError as error:  # a URL urllib cannot use (a host name too long, a bad port)
        raise RemoteError(f"the engine URL {url} cannot be used: {str(error)[:200]}") from error
    finally:
        if owned:
            deadline.cancel()
    try:
        answer = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError as error:
        raise RemoteError(f"the server at {url} answered {path} with JSON nested too deeply to read") from error
    except UnicodeDecodeError as error:
        raise RemoteError(f"the server at {url} answered {path} with bytes that are not UTF-8 text") from error
    except json.JSONDecodeError as error:
        raise RemoteError(
            f"the server at {url} answered {path} with something that is not JSON; "
            "is this an OpenAI-compatible API base (it ends in /v1)?"
        ) from error
    except ValueError as error:  # NaN, Infinity, 1e999, a number of 5,000 digits
        raise RemoteError(
            f"the server at {url} answered {path} with {str(error)[:80]}: its numbers cannot be shown; check the server"
        ) from error
    if not isinstance(answer, dict):
        raise RemoteError(
            f"the server at {url} answered {path} with a JSON {type(answer).__name__} where an object belongs: "
            "is this an OpenAI-compatible API base (it ends in /v1)?"
        )
    return answer
