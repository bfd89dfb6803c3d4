"""A TCP proxy in front of an HTTP object store that adds a fixed delay to every request and
counts requests: slow object storage on 127.0.0.1, measured.

The proxy parses the client's side of each connection just enough to find where one HTTP/1.1
request ends and the next begins (the request head up to its blank line, then a body of
``Content-Length`` bytes or ``Transfer-Encoding: chunked``), so the delay is paid **once per
request**, also on a keep-alive connection that carries many: when a request's head is
complete, the proxy records ``(method, path)``, waits ``delay`` seconds, then forwards it.
Responses are copied back as they come. Without TLS only (``http://`` endpoints).

:class:`DelayProxy` runs its event loop on a thread of the calling process, so it shares that
process's GIL with the code it measures: 16 threads of Python work waiting for the GIL delay
every piece the proxy forwards (measured: 320 ``HEAD`` requests from 16 boto3 threads through
a 20 ms proxy took 3.9 s, 195 ms per request in flight). :class:`ProxyProcess` is the same
proxy in a child process (``python _proxy.py <upstream port> <delay>``), with the same
``endpoint``, ``requests()``, ``count()``, ``by_method()`` and ``reset()``; the benchmark uses it.

>>> import socket, threading
>>> server = socket.create_server(("127.0.0.1", 0))
>>> def answer():
...     conn, _ = server.accept()
...     data = b""
...     while data.count(b"\\r\\n\\r\\n") < 2 or not data.endswith(b"abc"):
...         data += conn.recv(1024)
...     conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\n\\r\\n")
...     conn.close()
>>> thread = threading.Thread(target=answer); thread.start()
>>> with DelayProxy(server.getsockname()[1], delay=0.0) as proxy:
...     with socket.create_connection(("127.0.0.1", proxy.port)) as client:
...         client.sendall(b"GET /a HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
...                        b"PUT /b HTTP/1.1\\r\\nContent-Length: 3\\r\\n\\r\\nabc")
...         reply = client.recv(1024)
...     thread.join()
...     proxy.requests()
[('GET', '/a'), ('PUT', '/b')]
>>> server.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections import Counter
from types import TracebackType

__all__ = ["DelayProxy", "ProxyProcess"]

_CHUNK = 1 << 16


class _RequestParser:
    """Splits a client byte stream into HTTP/1.1 requests (heads, then bodies)."""

    def __init__(self) -> None:
        self.buffer = b""
        self.state = "head"
        self.remaining = 0  # body bytes (or chunk bytes + CRLF) still to pass

    def feed(self, data: bytes) -> list[tuple[bytes, tuple[str, str] | None]]:
        """Pieces to forward, in order; a piece that starts a request carries its
        ``(method, path)``."""
        self.buffer += data
        out: list[tuple[bytes, tuple[str, str] | None]] = []
        while self.buffer:
            if self.state == "head":
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    break
                head, self.buffer = self.buffer[: end + 4], self.buffer[end + 4 :]
                lines = head.decode("latin-1").split("\r\n")
                method, _, rest = lines[0].partition(" ")
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                out.append((head, (method, rest.rsplit(" ", 1)[0])))
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    self.state = "chunk-size"
                else:
                    self.remaining = int(headers.get("content-length", "0") or 0)
                    self.state = "body" if self.remaining else "head"
            elif self.state in ("body", "chunk-data"):
                piece = self.buffer[: self.remaining]
                self.buffer = self.buffer[len(piece) :]
                self.remaining -= len(piece)
                out.append((piece, None))
                if self.remaining == 0:
                    self.state = "head" if self.state == "body" else "chunk-size"
            else:  # "chunk-size" or "trailer": one line at a time
                end = self.buffer.find(b"\r\n")
                if end < 0:
                    break
                line, self.buffer = self.buffer[: end + 2], self.buffer[end + 2 :]
                out.append((line, None))
                if self.state == "trailer":
                    if line == b"\r\n":
                        self.state = "head"
                    continue
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.state = "trailer"
                else:
                    self.remaining, self.state = size + 2, "chunk-data"
        return out


class _Proxy:
    """What both proxies answer: their URL and the requests they forwarded since the last
    :meth:`reset`, whole (:meth:`requests`), counted, or by method."""

    port: int

    @property
    def endpoint(self) -> str:
        """The proxy's URL."""
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[tuple[str, str]]:
        """``(method, path with query)`` of every request forwarded since the last reset."""
        raise NotImplementedError

    def reset(self) -> None:
        """Forget the requests recorded so far."""
        raise NotImplementedError

    def count(self) -> int:
        """Requests forwarded since the last reset."""
        return len(self.requests())

    def by_method(self) -> Counter[str]:
        """Requests since the last reset, by HTTP method."""
        return Counter(method for method, _ in self.requests())


class DelayProxy(_Proxy):
    """A proxy on ``127.0.0.1:<port>`` to ``127.0.0.1:<upstream_port>``, delaying each request
    by ``delay`` seconds and recording it.

    Use it as a context manager (its event loop runs on a daemon thread); :attr:`endpoint` is
    its ``http://`` URL, :meth:`requests` what it forwarded, :meth:`reset` forgets them.
    """

    def __init__(self, upstream_port: int, *, delay: float = 0.02) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.port = 0
        self._log: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # the loop holds tasks weakly only

    def requests(self) -> list[tuple[str, str]]:
        """``(method, path with query)`` of every request forwarded since the last reset."""
        with self._lock:
            return list(self._log)

    def reset(self) -> None:
        """Forget the requests recorded so far."""
        with self._lock:
            self._log.clear()

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        )
        self._server = started.result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        server = self._server
        if server is not None:

            async def stop() -> None:
                server.close()
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        current = asyncio.current_task()
        if current is not None:
            self._keep(current)  # type: ignore[arg-type]
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        back = asyncio.ensure_future(self._copy(up_reader, writer))
        self._keep(back)
        try:
            parser = _RequestParser()
            while data := await reader.read(_CHUNK):
                for piece, request in parser.feed(data):
                    if request is not None:
                        with self._lock:
                            self._log.append(request)
                        if self.delay:
                            await asyncio.sleep(self.delay)
                    up_writer.write(piece)
                await up_writer.drain()
            if up_writer.can_write_eof():
                up_writer.write_eof()
            await back
        except (OSError, asyncio.CancelledError):
            back.cancel()
        finally:
            up_writer.close()
            writer.close()

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(_CHUNK):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            if writer.can_write_eof():
                with contextlib.suppress(OSError):
                    writer.write_eof()


class ProxyProcess(_Proxy):
    """A :class:`DelayProxy` in a child process: the delays and the forwarding do not wait
    for the GIL of the process being measured. Same interface as :class:`DelayProxy`; the
    requests are asked for over the child's stdin and stdout, one JSON line each way."""

    def __init__(self, upstream_port: int, *, delay: float = 0.02) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.port = 0
        self._child: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def _ask(self, command: str) -> object:
        child = self._child
        if child is None or child.stdin is None or child.stdout is None:
            raise RuntimeError("the proxy process is not running")
        with self._lock:
            child.stdin.write(command + "\n")
            child.stdin.flush()
            return json.loads(child.stdout.readline())

    def requests(self) -> list[tuple[str, str]]:
        """``(method, path with query)`` of every request forwarded since the last reset."""
        answer = self._ask("requests")
        assert isinstance(answer, list)
        return [(str(method), str(path)) for method, path in answer]

    def reset(self) -> None:
        """Forget the requests recorded so far."""
        self._ask("reset")

    def __enter__(self) -> ProxyProcess:
        self._child = subprocess.Popen(
            [sys.executable, __file__, str(self.upstream_port), repr(self.delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._child.stdout is not None
        self.port = int(self._child.stdout.readline())
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        if child.stdin is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()  # the child stops at the end of its input
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _child(upstream_port: int, delay: float) -> None:
    """The child of :class:`ProxyProcess`: its port, then one answer per command line."""
    with DelayProxy(upstream_port, delay=delay) as proxy:
        print(proxy.port, flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "reset":
                proxy.reset()
                answer: object = None
            else:
                answer = proxy.requests()
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    _child(int(sys.argv[1]), float(sys.argv[2]))
