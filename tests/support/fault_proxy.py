#!/usr/bin/env python3
"""An HTTP proxy for tests that forwards to an upstream (moto_server) and injects faults on matching requests.

Usage: fault_proxy.py --upstream http://127.0.0.1:PORT --port-file FILE

Control API on the same port (no S3 bucket can be named "__faults"):
  POST   /__faults   a JSON rule -> {"id": N}
  DELETE /__faults   removes every rule and zeroes the counters
  GET    /__faults   {"rules": [{"id": .., "hits": .., ...}], "requests": N}

A rule: method (exact), path_regex (on the path with its query), target_regex (on X-Amz-Target), body_regex (on the
body as latin-1): every one given must match (re.search). action: drop_after_forward, drop_before_forward, status,
status_after_forward or delay; status (int, 500), code ("InternalError"), body (sent as is, JSON, instead of the AWS
error made from code), delay_seconds; skip (0): the first N matching
requests pass; times (1, -1 = forever): how many after those get the fault. The first matching rule that still has
skips or faults left decides; hits counts the faults it applied.
"""

import argparse
import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTROL_PATH = "/__faults"
ACTIONS = {"drop_after_forward", "drop_before_forward", "status", "status_after_forward", "delay"}
# Not forwarded either way; Expect too, since the proxy has the whole body before it forwards.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade", "expect"}


class Rule:
    def __init__(self, rule_id, spec):
        self.id = rule_id
        self.spec = dict(spec)
        self.action = spec.get("action")
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r}")
        self.method = spec.get("method") or None
        # Empty strings mean "any": the C++ wrapper always sends every field.
        self.regexes = {key: re.compile(spec[key]) for key in ("path_regex", "target_regex", "body_regex")
                        if spec.get(key)}
        self.status = int(spec.get("status", 500))
        self.code = spec.get("code") or "InternalError"
        self.body = spec.get("body") or None  # sent as is (application/json) instead of an AWS-shaped error
        self.delay_seconds = float(spec.get("delay_seconds", 0))
        self.skips_left = int(spec.get("skip", 0))
        self.times_left = int(spec.get("times", 1))
        self.hits = 0

    def matches(self, method, path, target, body):
        if self.method and self.method != method:
            return False
        subjects = {"path_regex": path, "target_regex": target, "body_regex": body}
        return all(regex.search(subjects[key]) for key, regex in self.regexes.items())

    def exhausted(self):
        return self.skips_left == 0 and self.times_left == 0

    def describe(self):
        return {**self.spec, "id": self.id, "hits": self.hits}


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.next_id = 1
        self.requests = 0

    def add(self, spec):
        with self.lock:
            rule = Rule(self.next_id, spec)
            self.next_id += 1
            self.rules.append(rule)
            return rule.id

    def clear(self):
        with self.lock:
            self.rules = []
            self.requests = 0

    def describe(self):
        with self.lock:
            return {"rules": [rule.describe() for rule in self.rules], "requests": self.requests}

    def decide(self, method, path, target, body_bytes):
        """The rule whose fault applies to this request, or None to forward it untouched."""
        body = None
        with self.lock:
            self.requests += 1
            for rule in self.rules:
                if rule.exhausted():
                    continue
                if "body_regex" in rule.regexes and body is None:
                    body = body_bytes.decode("latin-1")
                if not rule.matches(method, path, target, body):
                    continue
                if rule.skips_left > 0:
                    rule.skips_left -= 1
                    return None
                if rule.times_left > 0:
                    rule.times_left -= 1
                rule.hits += 1
                return rule
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and http.server answers Expect: 100-continue
    server_version = "fault_proxy"

    def setup(self):
        super().setup()
        self.upstream = None  # one connection per client connection, i.e. per handler thread
        self.upstream_used = False

    def finish(self):
        try:
            super().finish()
        except (BrokenPipeError, ConnectionResetError):
            pass
        if self.upstream:
            self.upstream.close()

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def log_request(self, code="-", size="-"):
        pass

    def do_any(self):
        body = self.read_body()
        if body is None:
            return
        if self.path.split("?", 1)[0] == CONTROL_PATH:
            self.control(body)
            return
        target = self.headers.get("X-Amz-Target", "")
        rule = self.server.faults.decide(self.command, self.path, target, body)
        action = rule.action if rule else None
        if action == "drop_before_forward":
            self.close_connection = True
            return
        if action == "status":
            self.send_error_body(rule, target)
            return
        if action == "delay":
            time.sleep(rule.delay_seconds)
        response = self.forward(body)
        if response is None:
            return
        if action == "drop_after_forward":
            self.close_connection = True
        elif action == "status_after_forward":
            self.send_error_body(rule, target)
        else:
            self.relay(*response)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_any

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    self.close_connection = True
                    return None
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length", 0) or 0)
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            self.close_connection = True
            return None
        return body

    def forward(self, body):
        """(status, reason, headers, body) from the upstream, or None after answering 502."""
        # Retried once only on a reused connection: the upstream may have closed it while idle.
        for attempt in range(2):
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection(self.server.upstream_host, self.server.upstream_port,
                                                           timeout=600)
                self.upstream_used = False
            try:
                self.upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.upstream.putheader(name, value)
                if body or "Content-Length" in self.headers or "Transfer-Encoding" in self.headers:
                    self.upstream.putheader("Content-Length", str(len(body)))
                self.upstream.endheaders(body)
                response = self.upstream.getresponse()
                data = response.read()
                self.upstream_used = True
                return response.status, response.reason, response.getheaders(), data
            except (OSError, http.client.HTTPException) as error:
                reused = self.upstream_used
                self.upstream.close()
                self.upstream = None
                if attempt == 0 and reused:
                    continue
                print(f"fault_proxy: upstream {self.command} {self.path}: {error!r}", file=sys.stderr)
                self.send_bytes(502, "Bad Gateway", [("Content-Type", "text/plain")], f"upstream: {error!r}".encode())
                return None

    def relay(self, status, reason, headers, body):
        kept = [(n, v) for n, v in headers if n.lower() not in HOP_BY_HOP and n.lower() != "content-length"]
        # A HEAD or 304 answer's Content-Length describes a body that is not sent.
        if self.command == "HEAD" or status in (204, 304):
            kept += [(n, v) for n, v in headers if n.lower() == "content-length"]
            self.send_bytes(status, reason, kept, b"", content_length=False)
        else:
            self.send_bytes(status, reason, kept, body)

    def send_error_body(self, rule, target):
        if rule.body is not None:
            self.send_bytes(rule.status, None, [("Content-Type", "application/json")], rule.body.encode())
            return
        if target:
            content_type = "application/x-amz-json-1.0"
            body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{rule.code}", "message": "injected"})
        else:
            content_type = "application/xml"
            body = ('<?xml version="1.0" encoding="UTF-8"?>'
                    f"<Error><Code>{rule.code}</Code><Message>injected</Message></Error>")
        self.send_bytes(rule.status, None, [("Content-Type", content_type)], body.encode())

    def send_bytes(self, status, reason, headers, body, content_length=True):
        self.send_response_only(status, reason)
        for name, value in headers:
            self.send_header(name, value)
        if content_length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def control(self, body):
        faults = self.server.faults
        if self.command == "GET":
            answer = faults.describe()
        elif self.command == "DELETE":
            faults.clear()
            answer = {}
        elif self.command == "POST":
            try:
                answer = {"id": faults.add(json.loads(body or b"{}"))}
            except (ValueError, TypeError, re.error) as error:
                self.send_bytes(400, None, [("Content-Type", "application/json")],
                                json.dumps({"error": str(error)}).encode())
                return
        else:
            self.send_bytes(405, None, [], b"")
            return
        self.send_bytes(200, None, [("Content-Type", "application/json")], json.dumps(answer).encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)  # the traceback, to stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="http://host:port")
    parser.add_argument("--port-file", required=True, help="receives the listening port")
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.faults = Faults()
    serve(server, args.upstream, args.port_file)


def serve(server, upstream_url, port_file):
    """Forwards to `upstream_url` and serves until killed, once its port is in `port_file` (the gate's too)."""
    upstream = urllib.parse.urlsplit(upstream_url)
    server.upstream_host = upstream.hostname
    server.upstream_port = upstream.port or 80
    # Renamed into place so a reader never sees a half-written port.
    partial = port_file + ".partial"
    with open(partial, "w") as out:
        out.write(f"{server.server_address[1]}\n")
    os.replace(partial, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
