#!/usr/bin/env python3
"""A Redshift emulator for tests: Amazon Redshift's PostgreSQL wire protocol, served by a real PostgreSQL server.

Usage: redshift_emulator.py --upstream-port PORT --s3-endpoint URL --port-file FILE [--drop-commit-every N]
       [--cluster-region REGION]

Redshift speaks the PostgreSQL frontend/backend protocol (version 3), which is what libpq and so the Redshift sink
use. This emulator relays every message of a connection, unchanged, to the real PostgreSQL server (authentication,
simple and extended queries, errors and transaction states are the server's own), except where the two differ for
what the sink sends. Those differences live here, in one place:

- `COPY table [(columns)] FROM 's3://bucket/key' IAM_ROLE 'arn:aws:iam::<account>:role/<name>' FORMAT AS CSV
  [GZIP] [IGNOREHEADER 1] [NULL AS 'text'] [TIMEFORMAT 'auto'] [DATEFORMAT 'auto']`, sent as a simple query
  (TIMEFORMAT / DATEFORMAT 'auto' are PostgreSQL's own parsing of ISO 8601): the object is fetched from the S3
  endpoint (moto_server), gunzipped, and streamed to the server as `COPY ... FROM STDIN WITH (FORMAT csv)`. The
  server's answer ("COPY n", or its error) goes back to the client, inside the client's transaction as Redshift
  does it. A missing IAM_ROLE, a malformed role ARN, a missing object or a FORMAT other than CSV get Redshift's
  errors (raised in the server, so the transaction is aborted as in Redshift). `REGION [AS] 'region'`: Redshift
  requires it when the bucket is in another region than the cluster (--cluster-region, us-east-1 by default), and
  it must then name the bucket's region (GetBucketLocation); otherwise S3's PermanentRedirect, as Redshift reports it.
- String literals: a backslash is an escape, as in Redshift (the session runs with PostgreSQL's
  standard_conforming_strings = off, set in the startup message).
- SSLRequest and GSSENCRequest are answered "N" (no TLS on loopback).

Faults: with --drop-commit-every N, every Nth COMMIT is run by the server and then the connection to the client is
closed before the answer: the client cannot know whether its transaction committed (an unknown outcome).
"""

import argparse
import gzip
import os
import re
import socket
import struct
import sys
import threading

import boto3
import botocore.exceptions

from loopback_listener import serve_connections

S3 = None  # the client the COPYs read with (main)
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

COPY_FROM_S3 = re.compile(
    r"^\s*COPY\s+(?P<table>[^(]+?)\s*(?:\((?P<columns>[^)]*)\))?\s+FROM\s+'s3://(?P<bucket>[^/']+)/(?P<key>[^']+)'"
    r"(?P<options>.*?);?\s*$",
    re.IGNORECASE | re.DOTALL,
)
IAM_ROLE = re.compile(r"\bIAM_ROLE\s+'(?P<arn>[^']*)'", re.IGNORECASE)
ROLE_ARN = re.compile(r"^arn:aws:iam::\d{12}:role/[\w+=,.@/-]+$")
NULL_AS = re.compile(r"\bNULL\s+AS\s+'(?P<null>(?:[^']|'')*)'", re.IGNORECASE)
IGNORE_HEADER = re.compile(r"\bIGNOREHEADER\s+(?:AS\s+)?(?P<lines>\d+)", re.IGNORECASE)
REGION = re.compile(r"\bREGION\s+(?:AS\s+)?'(?P<region>[^']*)'", re.IGNORECASE)
FORMAT_AS = re.compile(r"\bFORMAT\s+(?:AS\s+)?(?P<format>\w+)", re.IGNORECASE)


def redshift_string_literals(startup):
    """The startup message with the session reading string literals as Redshift does: a backslash in '...' is an
    escape (PostgreSQL's standard_conforming_strings = off, without its warning about it). So SQL that is right only
    on PostgreSQL ('a\\b' meant as three characters) fails or differs here as on Redshift."""
    version, rest = startup[:4], startup[4:]
    fields = rest.split(b"\0")
    pairs = dict(zip(fields[0:-2:2], fields[1:-2:2]))
    extra = b"-c standard_conforming_strings=off -c escape_string_warning=off"
    pairs[b"options"] = (pairs[b"options"] + b" " + extra) if pairs.get(b"options") else extra
    return version + b"".join(k + b"\0" + v + b"\0" for k, v in pairs.items()) + b"\0"


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def read_message(sock):
    """One backend or frontend message after startup: (type, whole message bytes)."""
    head = read_exact(sock, 5)
    length = struct.unpack("!I", head[1:5])[0]
    return head[0:1], head + read_exact(sock, length - 4)


def message(kind, payload):
    return kind + struct.pack("!I", len(payload) + 4) + payload


def sql_literal(text):
    return "'" + text.replace("'", "''") + "'"


class Session:
    commits = 0
    commits_lock = threading.Lock()

    def __init__(self, client, args):
        self.client = client
        self.args = args
        self.server = None

    def run(self):
        try:
            if not self.startup():
                return
            while True:
                kind, msg = read_message(self.client)
                if kind == b"Q":
                    self.simple_query(msg[5:-1].decode("utf-8"), msg)
                elif kind == b"X":
                    self.server.sendall(msg)
                    return
                else:
                    # The extended protocol (Parse, Bind, Describe, Execute) is answered at Sync, which ends in
                    # ReadyForQuery. (libpq sends Flush only in pipeline mode, which the sink does not use.)
                    self.server.sendall(msg)
                    if kind == b"S":
                        self.relay_until_ready()
        except (ConnectionError, OSError):
            pass
        finally:
            for s in (self.client, self.server):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    def startup(self):
        while True:
            length = struct.unpack("!I", read_exact(self.client, 4))[0]
            body = read_exact(self.client, length - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                self.client.sendall(b"N")
                continue
            if code == CANCEL_REQUEST:
                return False
            self.server = socket.create_connection(("127.0.0.1", self.args.upstream_port))
            body = redshift_string_literals(body)
            self.server.sendall(struct.pack("!I", len(body) + 4) + body)
            break
        # Authentication goes back and forth until the server's first ReadyForQuery.
        while True:
            kind, msg = read_message(self.server)
            self.client.sendall(msg)
            if kind == b"Z":
                return True
            if kind == b"E":
                return False
            if kind == b"R":
                auth = struct.unpack("!I", msg[5:9])[0]
                if auth not in (0, 12):  # not Ok nor SASLFinal: the client answers
                    _, answer = read_message(self.client)
                    self.server.sendall(answer)

    def relay_until_ready(self, drop=False):
        """Relays the server's messages to the client up to and including ReadyForQuery; with `drop`, reads them
        and then closes the client's connection instead."""
        while True:
            kind, msg = read_message(self.server)
            if kind == b"Z":
                if drop:
                    raise ConnectionError("dropped after the server acted")
                self.client.sendall(msg)
                return
            if not drop:
                self.client.sendall(msg)

    def simple_query(self, sql, msg):
        copy = COPY_FROM_S3.match(sql)
        if copy:
            self.copy_from_s3(copy)
            return
        drop = False
        if re.match(r"^\s*(COMMIT|END)\s*;?\s*$", sql, re.IGNORECASE):
            with Session.commits_lock:
                Session.commits += 1
                drop = self.args.drop_commit_every > 0 and Session.commits % self.args.drop_commit_every == 0
        if drop:
            print("dropped the answer to COMMIT #{}".format(Session.commits), file=sys.stderr, flush=True)
        self.server.sendall(msg)
        self.relay_until_ready(drop=drop)

    def fail_in_server(self, text):
        """Raises Redshift's error inside the server, so the transaction aborts there as it would in Redshift."""
        body = "DO $skippr$ BEGIN RAISE EXCEPTION USING MESSAGE = {}, ERRCODE = 'XX000'; END $skippr$".format(
            sql_literal(text))
        self.server.sendall(message(b"Q", body.encode("utf-8") + b"\0"))
        self.relay_until_ready()

    def copy_from_s3(self, copy):
        options = copy.group("options")
        role = IAM_ROLE.search(options)
        if not role:
            return self.fail_in_server("CREDENTIALS argument is not supported or missing; use IAM_ROLE")
        if not ROLE_ARN.match(role.group("arn")):
            return self.fail_in_server("Invalid IAM role ARN: " + role.group("arn"))
        fmt = FORMAT_AS.search(options)
        if not fmt or fmt.group("format").upper() != "CSV":
            return self.fail_in_server("this emulator loads FORMAT AS CSV only")
        # Redshift reads the object as the role; here, with the credentials of the emulator's environment.
        try:
            bucket_region = S3.get_bucket_location(Bucket=copy.group("bucket")).get("LocationConstraint") or "us-east-1"
            region = REGION.search(options)
            if (region.group("region") if region else self.args.cluster_region) != bucket_region:
                return self.fail_in_server(
                    "S3ServiceException:The bucket you are attempting to access must be addressed using the specified "
                    "endpoint. Please send all future requests to this endpoint.,Status 301,Error PermanentRedirect")
            data = S3.get_object(Bucket=copy.group("bucket"), Key=copy.group("key"))["Body"].read()
        except botocore.exceptions.ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404"):
                return self.fail_in_server(
                    "S3ServiceException:The specified key does not exist.,Status 404,Error NoSuchKey")
            return self.fail_in_server("S3ServiceException:" + str(e))
        except (botocore.exceptions.BotoCoreError, OSError) as e:  # the endpoint itself is unreachable
            return self.fail_in_server("S3ServiceException:" + str(e))
        if re.search(r"\bGZIP\b", options, re.IGNORECASE):
            try:
                data = gzip.decompress(data)
            except OSError as e:
                return self.fail_in_server("gzip: " + str(e))
        null = NULL_AS.search(options)
        with_options = ["FORMAT csv"]
        header = IGNORE_HEADER.search(options)
        if header:
            if int(header.group("lines")) != 1:
                return self.fail_in_server("this emulator skips IGNOREHEADER 1 only")
            with_options.append("HEADER")
        if null:
            with_options.append("NULL " + sql_literal(null.group("null").replace("''", "'")))
        columns = "({})".format(copy.group("columns")) if copy.group("columns") else ""
        stdin_copy = "COPY {} {} FROM STDIN WITH ({})".format(copy.group("table"), columns, ", ".join(with_options))
        self.server.sendall(message(b"Q", stdin_copy.encode("utf-8") + b"\0"))
        while True:
            kind, msg = read_message(self.server)
            if kind == b"G":
                for start in range(0, len(data), 1 << 20):
                    self.server.sendall(message(b"d", data[start:start + (1 << 20)]))
                self.server.sendall(message(b"c", b""))
                self.relay_until_ready()
                return
            self.client.sendall(msg)
            if kind == b"Z":
                return


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--s3-endpoint", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--drop-commit-every", type=int, default=0)
    parser.add_argument("--cluster-region", default="us-east-1")
    args = parser.parse_args()
    global S3
    S3 = boto3.client("s3", endpoint_url=args.s3_endpoint, region_name=os.environ.get("AWS_REGION", "us-east-1"))
    serve_connections(args.port_file, lambda client: Session(client, args).run())


if __name__ == "__main__":
    sys.exit(main())
