#!/usr/bin/env python3
"""A small fault-injecting HTTP proxy for darkdisk's remote tests (Python 3 standard library only).

    fault-proxy.py (--upstream http://127.0.0.1:PORT | --serve-root DIR) [--port N] [--verbose]

Listens on 127.0.0.1 (port 0 = any free port) and prints `listening http://127.0.0.1:PORT` on stdout
when ready. GET and HEAD requests are forwarded to the upstream with their headers (Range, If-Match,
Accept...); the answer's status and headers come back as they are and the body is streamed, counting
the body bytes sent, per path. With --serve-root the proxy starts its own upstream: a real nginx
(Debian's) serving DIR with Range, ETag and a JSON directory index, stopped when the proxy stops.

Faults are set at run time, so one proxy serves a whole test:

    POST /__control  {JSON}    merges these settings (all optional):
      "cut":      {"after": BYTES, "count": K, "path": SUBSTRING}   close the connection after BYTES of
                  body bytes, for the next K GET responses (of paths containing SUBSTRING)
      "fail":     {"status": 503, "count": K, "path": SUBSTRING, "method": "GET"}   answer STATUS to the
                  next K requests (of that path and method, if given)
      "throttle": BYTES_PER_SECOND                                 all bodies together, 0 = full speed
      "stall":    {"after": BYTES, "seconds": S, "count": K, "path": SUBSTRING}  stop sending for S
                  seconds after BYTES of body bytes, for the next K GET responses
      "hold":     BYTES     all streamed bodies together send BYTES more body bytes (counted from this
                  setting), then wait, connections open, until "hold" is set again (null lifts it); bodies
                  sent whole (chunked or padded answers) are not held
      "ignore_range": {"count": K}                                 drop the Range header of the next K
                  GETs, so the upstream answers 200 with the whole object
      "pad":      {"bytes": N, "count": K, "path": SUBSTRING}      send N more body bytes (0x5A) than the
                  upstream's answer has, in the next K GET responses, with Content-Length raised to match
                  and every other header (Content-Range included) left as the upstream sent it: an answer
                  whose length disagrees with its own range
      "replace":  {"path": "/nodes/x.ddc", "target": FILE, "sources": [FILE, ...], "after": N,
                   "every": M}   before forwarding the (N+1)th GET of PATH (counted from this setting),
                  replace TARGET (the file the upstream serves) with a copy of the first source with a new
                  modification time (so nginx gives it a new ETag); with "every": M > 0, do it again every
                  M GETs after that, cycling through the sources
      Each of cut, fail, stall, ignore_range and pad may also be a list of such rules (the first that applies
      and has occurrences left is used).
      "clear": true         removes every fault;     "reset_stats": true    zeroes the counters
    GET /__stats     {"bytes": total body bytes sent, "paths": {PATH: {"gets", "heads", "bytes"}},
                      "cuts", "failures", "stalls", "ignored_ranges", "replacements", "pads",
                      "requests": [{"method", "path", "range", "status", "bytes", "fault"}, ...]}
                     Bytes are counted as they are handed to the socket (a write that fails is taken back);
                     a request is listed when it arrives and its entry updated as it goes.
"""

import argparse
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"}


class State:
    """Faults and counters, shared by all handler threads under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.faults = {}
        self.replaced = 0
        self.pace_next = 0.0
        self.hold_sent = 0
        self.reset_stats()

    def reset_stats(self):
        self.bytes = 0
        self.paths = {}
        self.cuts = 0
        self.failures = 0
        self.stalls = 0
        self.ignored_ranges = 0
        self.replacements = 0
        self.pads = 0
        self.requests = []

    def path_stats(self, path):
        return self.paths.setdefault(path, {"gets": 0, "heads": 0, "bytes": 0})

    def claim(self, name, path, method):
        """Takes one of the next K occurrences of fault `name` if it applies to this request; returns its
        settings. A fault may be a list of rules: the first that applies and has occurrences left is used."""
        value = self.faults.get(name)
        if isinstance(value, int):
            value = self.faults[name] = {"count": value}
        for fault in value if isinstance(value, list) else [value] if value else []:
            if fault.get("count", 0) <= 0:
                continue
            if fault.get("path") and fault["path"] not in path:
                continue
            if fault.get("method") and fault["method"] != method:
                continue
            fault["count"] -= 1
            return dict(fault)
        return None

    def pace(self, count):
        """Global throttle: reserves time for `count` bytes on one shared clock, then sleeps until it is due."""
        with self.lock:
            rate = self.faults.get("throttle", 0) or 0
            if rate <= 0:
                return
            now = time.monotonic()
            start = max(now, self.pace_next)
            self.pace_next = start + count / rate
            due = self.pace_next
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def snapshot(self):
        """The counters as JSON text, made under the lock (handler threads add to them as it is written)."""
        with self.lock:
            return json.dumps({
                "bytes": self.bytes, "paths": self.paths, "cuts": self.cuts, "failures": self.failures,
                "stalls": self.stalls, "ignored_ranges": self.ignored_ranges, "replacements": self.replacements, "pads": self.pads,
                "requests": self.requests, "faults": self.faults,
            })


STATE = State()


def replace_file(target, source):
    """Atomically replaces `target` with a copy of `source`, with a modification time 2 s after the old
    one's: nginx's ETag is mtime-size, and both versions of a cloud file usually have the same size."""
    old = os.stat(target).st_mtime if os.path.exists(target) else time.time()
    temporary = target + ".fault-proxy-tmp"
    shutil.copyfile(source, temporary)
    mtime = int(old) + 2
    os.utime(temporary, (mtime, mtime))
    os.replace(temporary, target)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None  # (host, port, path prefix)
    verbose = False

    def log_message(self, format, *args):
        if self.verbose:
            sys.stderr.write("fault-proxy: " + (format % args) + "\n")

    # Control ---------------------------------------------------------------------------------------

    def reply_json(self, status, value):
        body = (value if isinstance(value, str) else json.dumps(value)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b"{}"
        if self.path != "/__control":
            self.reply_json(405, {"error": "the proxy forwards GET and HEAD only"})
            return
        try:
            settings = json.loads(body)
        except ValueError as error:
            self.reply_json(400, {"error": str(error)})
            return
        with STATE.lock:
            if settings.pop("clear", False):
                STATE.faults = {}
            if settings.pop("reset_stats", False):
                STATE.reset_stats()
            for name, value in settings.items():
                if name == "hold":
                    STATE.hold_sent = 0
                if name == "replace" and value:
                    # GETs are counted from now on.
                    value = dict(value, done=0, base=STATE.path_stats(value["path"])["gets"])
                STATE.faults[name] = value
            faults = dict(STATE.faults)
        self.reply_json(200, {"faults": faults})

    # Forwarding ------------------------------------------------------------------------------------

    def do_HEAD(self):
        self.forward("HEAD")

    def do_GET(self):
        if self.path == "/__stats":
            self.reply_json(200, STATE.snapshot())
            return
        self.forward("GET")

    def record(self, entry):
        with STATE.lock:
            if len(STATE.requests) < 10000:
                STATE.requests.append(entry)

    def forward(self, method):
        path = urllib.parse.urlsplit(self.path).path
        entry = {"method": method, "path": path, "range": self.headers.get("Range"), "status": 0, "bytes": 0, "fault": None}
        # Listed at once and updated in place: a client that has its answer finds it listed.
        self.record(entry)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        cut = stall = pad = None
        with STATE.lock:
            stats = STATE.path_stats(path)
            stats["gets" if method == "GET" else "heads"] += 1
            gets = stats["gets"]
            failure = STATE.claim("fail", path, method)
            if failure:
                STATE.failures += 1
            elif method == "GET":
                cut = STATE.claim("cut", path, method)
                stall = STATE.claim("stall", path, method)
                pad = STATE.claim("pad", path, method)
                if "Range" in headers and STATE.claim("ignore_range", path, method) is not None:
                    del headers["Range"]
                    STATE.ignored_ranges += 1
                    entry["fault"] = "ignore_range"
                replacement = self.due_replacement(path, gets)
                if replacement:
                    replace_file(*replacement)
                    STATE.replacements += 1
        if failure:
            status = int(failure.get("status", 503))
            entry.update(status=status, fault="fail")
            body = b"injected failure\n"
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if method == "GET":
                self.wfile.write(body)
            return

        host, port, prefix = self.upstream
        connection = http.client.HTTPConnection(host, port, timeout=60)
        try:
            connection.request(method, prefix + self.path, headers=headers)
            response = connection.getresponse()
            entry["status"] = response.status
            length = response.getheader("Content-Length")
            body = None
            if method == "GET" and length is None:
                body = response.read()  # a chunked answer (a directory index): send it with a length
                length = str(len(body))
            extra = int(pad.get("bytes", 0)) if pad else 0
            if extra:
                body = (response.read() if body is None else body) + b"\x5a" * extra
                length = str(len(body))
                entry["fault"] = "pad"
                with STATE.lock:
                    STATE.pads += 1
            self.log_request(response.status)
            self.send_response_only(response.status, response.reason)  # the upstream's Server and Date go through
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP and not (body is not None and name.lower() == "content-length"):
                    self.send_header(name, value)
            if body is not None:
                self.send_header("Content-Length", length)
            self.end_headers()
            if method == "HEAD":
                return
            if body is not None:
                self.send_body_bytes(body, path, entry)
            else:
                self.stream(response, int(length), path, entry, cut, stall)
        except (BrokenPipeError, ConnectionResetError):
            entry["fault"] = entry["fault"] or "client went away"
            self.close_connection = True
        finally:
            connection.close()

    def due_replacement(self, path, gets):
        """Called under the lock for each GET: the (target, source) to swap in before forwarding, if any."""
        replace = STATE.faults.get("replace")
        if not replace or replace.get("path") != path:
            return None
        after, every, sources = int(replace.get("after", 0)), int(replace.get("every", 0)), replace["sources"]
        gets -= replace["base"]
        if gets <= after:
            return None
        if every <= 0:
            if replace["done"] > 0:
                return None
        elif (gets - after - 1) % every != 0:
            return None
        source = sources[replace["done"] % len(sources)]
        replace["done"] += 1
        return (replace["target"], source)

    def send_body_bytes(self, data, path, entry):
        self.counted_write(data, path, entry)

    def counted_write(self, data, path, entry):
        """Counts bytes before they go (a client that has them all finds them counted), and takes back a
        count whose write failed."""
        self.count(len(data), path, entry)
        try:
            self.wfile.write(data)
        except OSError:
            self.count(-len(data), path, entry)
            with STATE.lock:
                if STATE.faults.get("hold") is not None:
                    STATE.hold_sent = max(0, STATE.hold_sent - len(data))  # (its reservation, back)
            raise

    def count(self, n, path, entry):
        entry["bytes"] += n
        with STATE.lock:
            STATE.bytes += n
            STATE.path_stats(path)["bytes"] += n

    def stream(self, response, length, path, entry, cut, stall):
        sent = 0
        while sent < length:
            if cut and sent >= cut["after"]:
                entry["fault"] = "cut"
                with STATE.lock:
                    STATE.cuts += 1
                self.abort()
                return
            if stall and sent >= stall["after"]:
                entry["fault"] = "stall"
                with STATE.lock:
                    STATE.stalls += 1
                time.sleep(float(stall.get("seconds", 1)))
                stall = None
                continue
            with STATE.lock:
                rate = STATE.faults.get("throttle", 0) or 0
            size = 64 * 1024 if rate <= 0 else max(4096, min(64 * 1024, int(rate / 50)))
            size = min(size, length - sent)
            if cut:
                size = min(size, cut["after"] - sent)
            if stall:
                size = min(size, stall["after"] - sent)
            size = self.held(size)
            data = response.read(size)
            if not data:
                self.abort()  # the upstream ended early: pass the truncation on
                return
            STATE.pace(len(data))
            self.counted_write(data, path, entry)
            sent += len(data)

    def held(self, size):
        """Waits while a hold has no room left; returns how many of `size` bytes may go now (reserved)."""
        while True:
            with STATE.lock:
                hold = STATE.faults.get("hold")
                if hold is None:
                    return size
                room = int(hold) - STATE.hold_sent
                if room > 0:
                    size = min(size, room)
                    STATE.hold_sent += size
                    return size
            time.sleep(0.01)

    def abort(self):
        """Closes the client connection in the middle of a body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if Handler.verbose:
            super().handle_error(request, client_address)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(pid, port):
    """Whether process `pid` holds a socket listening on 127.0.0.1:`port`: a connection alone may reach
    another server that took the port between `free_port` and nginx's bind."""
    local = "0100007F:%04X" % port
    try:
        with open("/proc/net/tcp") as f:
            inodes = {fields[9] for fields in (line.split() for line in f.readlines()[1:])
                      if len(fields) > 9 and fields[1] == local and fields[3] == "0A"}
        links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return False
    return any(f"socket:[{inode}]" in links for inode in inodes)


def start_nginx(root):
    """A real nginx serving `root` on a free port: returns (process, port, prefix folder). A port another
    server took first makes nginx give up: it starts again on another one."""
    prefix = tempfile.mkdtemp(prefix="darkdisk-proxy-nginx-")
    user = "user root;" if os.getuid() == 0 else ""
    for _ in range(5):
        port = free_port()
        config = f"""
            {user}
            worker_processes 1;
            daemon off;
            error_log {prefix}/error.log;
            pid {prefix}/nginx.pid;
            events {{ worker_connections 512; }}
            http {{
              access_log {prefix}/access.log;
              client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy;
              fastcgi_temp_path {prefix}/fastcgi; uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
              server {{
                listen 127.0.0.1:{port};
                root {os.path.abspath(root)};
                autoindex on;
                autoindex_format json;
              }}
            }}
            """
        with open(prefix + "/nginx.conf", "w") as f:
            f.write(config)
        process = subprocess.Popen(["/usr/sbin/nginx", "-p", prefix, "-c", prefix + "/nginx.conf"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if listens(process.pid, port):
                return process, port, prefix
            if process.poll() is not None:
                break
            time.sleep(0.05)
        if process.poll() is None:
            process.kill()
            break
    raise SystemExit("fault-proxy: nginx did not start: " + open(prefix + "/error.log").read())


def main():
    parser = argparse.ArgumentParser(description="fault-injecting HTTP proxy for darkdisk's tests")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--upstream", help="http://HOST:PORT[/prefix] to forward to")
    source.add_argument("--serve-root", help="start an nginx serving this folder and forward to it")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    nginx = None
    if args.serve_root:
        nginx = start_nginx(args.serve_root)
        Handler.upstream = ("127.0.0.1", nginx[1], "")
    else:
        url = urllib.parse.urlsplit(args.upstream)
        Handler.upstream = (url.hostname, url.port or 80, url.path.rstrip("/"))
    Handler.verbose = args.verbose

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server = Server(("127.0.0.1", args.port), Handler)
        print(f"listening http://127.0.0.1:{server.server_address[1]}", flush=True)
        server.serve_forever(poll_interval=0.1)
    finally:
        if nginx:
            nginx[0].terminate()
            try:
                nginx[0].wait(timeout=5)
            except subprocess.TimeoutExpired:
                nginx[0].kill()
            shutil.rmtree(nginx[2], ignore_errors=True)


if __name__ == "__main__":
    main()
