#!/usr/bin/env python3
"""server_connections.py - `encore serve`'s connection slots, with real sockets on 127.0.0.1.

`server_connections.py --encore BIN --models DIR CHECK`, one ctest test per check;
servers are started and stopped by server_e2e.py's Server, each check under its
deadline (run_check).

  slowloris  600 connections trickle header bytes (one every 0.5 s) into a server
             with --request-read-timeout 3: a normal client still gets each of its
             answers within a second meanwhile, and every trickling connection is
             closed between 3 s and 5 s after it opened, though it never went silent
  per_ip     --max-connections-per-ip 4: a fifth connection from 127.0.0.1 is closed
             without an answer while one from 127.0.0.2 is served; once one of the
             four closes, 127.0.0.1 is served again; without the flag the 33rd is
             closed (the default, 32)
  fds        1100 idle connections (--max-connections 1200): the server's sockets
             are numbered past 1024, where select() cannot go, and a normal client
             is still answered
"""
import os
import resource
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_e2e import Server, fail, run_check  # noqa: E402

HEAD = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def timed_completion(srv, limit_s=1.0):
    """A short greedy completion, answered 200 within limit_s."""
    t0 = time.monotonic()
    try:
        status, body, _ = srv.post("/v1/completions", {"prompt": "Hello", "max_tokens": 4, "temperature": 0},
                                   timeout=10)
    except OSError as e:
        fail(f"normal client: no answer: {e!r}")
    took = time.monotonic() - t0
    if status != 200 or not body["choices"][0]["text"]:
        fail(f"normal client: {status} {body}")
    if took > limit_s:
        fail(f"normal client answered after {took:.2f} s, more than {limit_s} s")
    return took


def open_idle(port, n, source="127.0.0.1", first=b"", opened=None):
    """n connections from `source`, each having sent `first`; when `opened`
    is a list, the time each began connecting is appended to it (the
    server accepts it later)."""
    out = []
    for _ in range(n):
        if opened is not None:
            opened.append(time.monotonic())
        s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
        if first:
            s.sendall(first)
        out.append(s)
    return out


def served(port, source="127.0.0.1"):
    """GET /health on a new connection: its status, or None when the server
    closed the connection without an answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = s.recv(4096)
    except (ConnectionResetError, BrokenPipeError):
        return None
    except socket.timeout:
        fail(f"GET /health from {source}: neither answered nor closed within 5 s")
    finally:
        s.close()
    return int(data.split()[1]) if data else None


class Trickler(threading.Thread):
    """Sends one more header byte on every open socket each `period` s and
    records, per socket, when the server closed it (seconds after it opened)."""

    def __init__(self, socks, opened, period=0.5):
        super().__init__(daemon=True)
        self.socks, self.opened, self.period = socks, opened, period
        self.closed = [None] * len(socks)
        self.stop = threading.Event()
        self.poll = select.poll()
        self.fd_index = {s.fileno(): i for i, s in enumerate(socks)}
        for s in socks:
            s.setblocking(False)
            self.poll.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)

    def mark_closed(self, i):
        if self.closed[i] is None:
            self.closed[i] = time.monotonic() - self.opened[i]
            self.poll.unregister(self.socks[i])

    def run(self):
        next_byte = time.monotonic()
        while not self.stop.is_set() and None in self.closed:
            for fd, ev in self.poll.poll(50):
                i = self.fd_index[fd]
                try:
                    if self.socks[i].recv(4096) == b"" or ev & (select.POLLHUP | select.POLLERR):
                        self.mark_closed(i)
                except (ConnectionResetError, BlockingIOError):
                    self.mark_closed(i)
            if time.monotonic() >= next_byte:
                next_byte += self.period
                for i, s in enumerate(self.socks):
                    if self.closed[i] is None:
                        try:
                            s.send(b"a")
                        except (BrokenPipeError, ConnectionResetError):
                            self.mark_closed(i)
                        except BlockingIOError:
                            pass


def check_slowloris(a):
    n, deadline = 600, 3
    with Server(a, "--max-connections", "700", "--max-connections-per-ip", "1000",
                "--request-read-timeout", str(deadline)) as srv:
        timed_completion(srv, limit_s=10)  # the first request may warm the engine up
        opened = []
        socks = open_idle(srv.port, n, first=HEAD, opened=opened)
        t = Trickler(socks, opened)
        t.start()
        worst = max(timed_completion(srv) for _ in range(5))
        if any(c is not None for c in t.closed):
            fail(f"trickling connections closed before the deadline ({deadline} s): "
                 f"{sorted(c for c in t.closed if c is not None)[:5]}")
        print(f"ok: with {n} connections trickling, 5 normal requests answered, the slowest in {worst:.3f} s")
        t.join(timeout=deadline + 10)
        t.stop.set()
        left = sum(c is None for c in t.closed)
        if left:
            fail(f"{left} of {n} trickling connections still open {deadline + 10} s after they opened")
        early, late = min(t.closed), max(t.closed)
        if early < deadline or late > deadline + 2:
            fail(f"trickling connections closed {early:.2f} .. {late:.2f} s after opening, "
                 f"expected {deadline} .. {deadline + 2} s")
        print(f"ok: all {n} trickling connections closed {early:.2f} .. {late:.2f} s after they opened "
              f"(--request-read-timeout {deadline})")
        for s in socks:
            s.close()
        timed_completion(srv)
        print("ok: served normally after them")


def expect_refused(port, source, why):
    got = served(port, source)
    if got is not None:
        fail(f"{why}: a connection from {source} got {got}, expected it closed unanswered")
    print(f"ok: {why}: closed unanswered")


def expect_served(port, source, why):
    got = served(port, source)
    if got != 200:
        fail(f"{why}: a connection from {source} got {got}, expected 200")
    print(f"ok: {why}: 200")


def server_fds(srv):
    return len(os.listdir(f"/proc/{srv.p.pid}/fd"))


def wait_fds(srv, ok, timeout=15.0):
    """The server's descriptor count once ok(count) holds, or after timeout
    seconds: its listening thread accepts and closes connections in its own
    time (under a sanitizer on a busy machine, a fixed 0.3 s saw 955 of 1100
    accepted)."""
    deadline = time.monotonic() + timeout
    n = server_fds(srv)
    while not ok(n) and time.monotonic() < deadline:
        time.sleep(0.05)
        n = server_fds(srv)
    return n


def expect_ip_limit(srv, limit):
    """`limit` connections from 127.0.0.1 held open: one more is closed
    unanswered, one from 127.0.0.2 is served; once one closes, 127.0.0.1 is
    served again."""
    base = server_fds(srv)
    held = open_idle(srv.port, limit, first=b"GET /health HTTP/1.1\r\n")
    wait_fds(srv, lambda n: n >= base + limit)
    expect_refused(srv.port, "127.0.0.1", f"connection {limit + 1} from 127.0.0.1 (limit {limit})")
    expect_served(srv.port, "127.0.0.2", "one from 127.0.0.2 meanwhile")
    held.pop().close()
    wait_fds(srv, lambda n: n < base + limit)
    expect_served(srv.port, "127.0.0.1", f"127.0.0.1 once one of its {limit} closed")
    for s in held:
        s.close()


def check_per_ip(a):
    with Server(a, "--max-connections-per-ip", "4") as srv:
        expect_ip_limit(srv, 4)
    with Server(a) as srv:
        expect_ip_limit(srv, 32)  # the default


def check_fds(a):
    n = 1100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 100
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            fail(f"this check needs {want} open files; the hard limit is {hard} (ulimit -Hn)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    with Server(a, "--max-connections", "1200", "--max-connections-per-ip", "0") as srv:
        held = open_idle(srv.port, n, first=b"GET /health HTTP/1.1\r\n")
        fds = wait_fds(srv, lambda m: m > 1024)
        if fds <= 1024:
            fail(f"the server holds {fds} descriptors with {n} connections open: expected more than 1024")
        took = timed_completion(srv)
        print(f"ok: with {n} connections open (the server holds {fds} descriptors), "
              f"a normal client is answered in {took:.3f} s")
        expect_served(srv.port, "127.0.0.1", "GET /health")
        for s in held:
            s.close()


if __name__ == "__main__":
    run_check(__doc__, globals())
