#!/usr/bin/env python3
"""A Cloud Storage emulator for skipprd's tests: the public JSON API subset skipprd calls, on a loopback port.

It is an emulator written for these tests, not Google's server. No GCS server can run here, so this one implements,
as Google documents them, the parts a client could get wrong:

- the OAuth token endpoint of a service account: the JWT's RS256 signature is verified against the account's public
  key (PKCS#1 v1.5 with the SHA-256 DigestInfo, in plain integers), its aud, iss, scope, iat and exp are checked, and
  random tokens are issued with expires_in; a wrong key is 400 invalid_grant as Google answers it;
- Bearer authentication on every storage call (401 without a token or with one it did not issue);
- buckets (get, insert; 404 for a missing one), media uploads, resumable uploads (a session URI in Location, 308 with
  a Range header while incomplete, chunks in multiples of 256 KiB, the final chunk 200), ifGenerationMatch on uploads,
  reads and deletes (0 = "only if absent": 412 when the object exists), generations that increase with every write,
  object metadata and alt=media downloads, listings by prefix with pageToken paging (50 a page, so paging is used);
- storage in a folder: an upload is written to a temporary file and renamed into place when it is whole, so a client
  killed mid-upload never leaves a visible partial object.

Test hooks under /_emulator/ (no auth): POST /_emulator/faults {"drop_after_insert": N} stores the N-th next upload
and then closes the connection without answering (an unknown outcome); GET /_emulator/stats; GET /_emulator/tokens
(every token issued, so a test can check none leaked). An --admin-token is accepted as a bearer token too, so the
test support reads and writes objects without going through skipprd's client.
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import subprocess
import threading
import time
import urllib.parse

CHUNK_QUANTUM = 256 * 1024
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
STORAGE_SCOPES = ("devstorage.read_write", "devstorage.full_control", "cloud-platform")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


def public_key_numbers(pem_path):
    """(modulus, exponent) of an RSA public key, as the openssl CLI prints them."""
    modulus = subprocess.run(["openssl", "rsa", "-pubin", "-in", pem_path, "-noout", "-modulus"], check=True,
                             capture_output=True, text=True).stdout
    text = subprocess.run(["openssl", "rsa", "-pubin", "-in", pem_path, "-noout", "-text"], check=True,
                          capture_output=True, text=True).stdout
    exponent = re.search(r"Exponent: (\d+)", text)
    return int(modulus.strip().split("=", 1)[1], 16), int(exponent.group(1))


def rs256_valid(signing_input, signature, n, e):
    """RSASSA-PKCS1-v1_5 verification with SHA-256 (RFC 8017 8.2.2), in integers."""
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:
        return False
    s = int.from_bytes(signature, "big")
    if s >= n:
        return False
    em = pow(s, e, n).to_bytes(k, "big")
    t = SHA256_DIGEST_INFO + hashlib.sha256(signing_input).digest()
    if k < len(t) + 11:
        return False
    expected = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
    return hmac.compare_digest(em, expected)


class Store:
    """Buckets and objects in a folder: root/b/<bucket>/o/<quoted name>.json (metadata, the commit point) and
    root/b/<bucket>/d/<quoted name>.<generation> (the bytes)."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.last_generation = 0
        os.makedirs(os.path.join(root, "b"), exist_ok=True)
        os.makedirs(os.path.join(root, "tmp"), exist_ok=True)

    def bucket_dir(self, bucket):
        return os.path.join(self.root, "b", urllib.parse.quote(bucket, safe=""))

    def bucket_exists(self, bucket):
        return bool(bucket) and os.path.isdir(self.bucket_dir(bucket))

    def create_bucket(self, bucket):
        d = self.bucket_dir(bucket)
        if os.path.isdir(d):
            return False
        os.makedirs(os.path.join(d, "o"))
        os.makedirs(os.path.join(d, "d"))
        return True

    def meta_path(self, bucket, name):
        return os.path.join(self.bucket_dir(bucket), "o", urllib.parse.quote(name, safe="") + ".json")

    def data_path(self, bucket, name, generation):
        return os.path.join(self.bucket_dir(bucket), "d", "%s.%s" % (urllib.parse.quote(name, safe=""), generation))

    def temp_path(self):
        return os.path.join(self.root, "tmp", secrets.token_hex(12))

    def metadata(self, bucket, name):
        try:
            with open(self.meta_path(bucket, name)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def next_generation(self):
        # Like GCS's: microseconds since the epoch, strictly increasing.
        self.last_generation = max(self.last_generation + 1, time.time_ns() // 1000)
        return self.last_generation

    def commit(self, bucket, name, temp, size, md5, content_type, if_generation_match):
        """Makes a whole upload visible under `name`; None when the precondition fails (the upload is dropped)."""
        with self.lock:
            current = self.metadata(bucket, name)
            if not precondition_holds(current, if_generation_match):
                os.unlink(temp)
                return None
            generation = self.next_generation()
            os.rename(temp, self.data_path(bucket, name, generation))
            now = time.time()
            meta = {
                "kind": "storage#object",
                "id": "%s/%s/%d" % (bucket, name, generation),
                "name": name,
                "bucket": bucket,
                "generation": str(generation),
                "metageneration": "1",
                "contentType": content_type or "application/octet-stream",
                "size": str(size),
                "md5Hash": base64.b64encode(md5).decode(),
                "storageClass": "STANDARD",
                "timeCreated": rfc3339(now),
                "updated": rfc3339(now),
            }
            meta_temp = self.temp_path()
            with open(meta_temp, "w") as f:
                json.dump(meta, f)
            os.rename(meta_temp, self.meta_path(bucket, name))
            if current:
                os.unlink(self.data_path(bucket, name, current["generation"]))
            return meta

    def delete(self, bucket, name, if_generation_match):
        """'deleted', 'missing' or 'precondition'."""
        with self.lock:
            current = self.metadata(bucket, name)
            if current is None:
                return "missing"
            if not precondition_holds(current, if_generation_match):
                return "precondition"
            os.unlink(self.meta_path(bucket, name))
            os.unlink(self.data_path(bucket, name, current["generation"]))
            return "deleted"

    def open_object(self, bucket, name):
        """(metadata, open data file) of the current generation, or (None, None)."""
        with self.lock:
            meta = self.metadata(bucket, name)
            if meta is None:
                return None, None
            return meta, open(self.data_path(bucket, name, meta["generation"]), "rb")

    def names(self, bucket):
        folder = os.path.join(self.bucket_dir(bucket), "o")
        return sorted(urllib.parse.unquote(f[:-5]) for f in os.listdir(folder) if f.endswith(".json"))


def precondition_holds(current, if_generation_match):
    if if_generation_match is None:
        return True
    if if_generation_match == "0":
        return current is None
    return current is not None and current["generation"] == if_generation_match


class Emulator:
    def __init__(self, args):
        self.store = Store(args.root)
        self.modulus, self.exponent = public_key_numbers(args.public_key)
        self.client_email = args.client_email
        self.admin_token = args.admin_token
        self.token_ttl = args.token_ttl
        self.page_size = args.page_size
        self.port = args.port
        self.lock = threading.Lock()
        self.tokens = {}  # token -> expiry (epoch seconds)
        self.sessions = {}  # upload_id -> dict
        self.drop_after_insert = 0
        self.stats = {"uploads": 0, "precondition_failed": 0, "dropped": 0, "tokens_issued": 0,
                      "tokens_refused": 0, "unauthorized": 0, "resumable_sessions": 0,
                      "chunks": 0}

    def token_uri(self):
        return "http://127.0.0.1:%d/token" % self.port

    def count(self, key):
        with self.lock:
            self.stats[key] += 1

    def authorized(self, header):
        if not header or not header.startswith("Bearer "):
            return False
        token = header[len("Bearer "):].strip()
        if self.admin_token and hmac.compare_digest(token, self.admin_token):
            return True
        with self.lock:
            expiry = self.tokens.get(token)
        return expiry is not None and expiry > time.time()

    def should_drop(self):
        """True for the upload whose answer the drop_after_insert fault is to lose."""
        with self.lock:
            if self.drop_after_insert <= 0:
                return False
            self.drop_after_insert -= 1
            if self.drop_after_insert == 0:
                self.stats["dropped"] += 1
                return True
            return False

    def grant(self, form):
        """(status, body) of the token endpoint for a JWT-bearer grant."""
        def refuse(description):
            self.count("tokens_refused")
            return 400, {"error": "invalid_grant", "error_description": description}

        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type."}
        parts = form.get("assertion", "").split(".")
        if len(parts) != 3:
            return refuse("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except (ValueError, TypeError):
            return refuse("Invalid JWT.")
        if header.get("alg") != "RS256":
            return refuse("Invalid JWT: the algorithm must be RS256.")
        if not rs256_valid((parts[0] + "." + parts[1]).encode(), signature, self.modulus, self.exponent):
            return refuse("Invalid JWT Signature.")
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or exp <= now or iat > now + 300 or exp - iat > 3600:
            return refuse("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        if claims.get("aud") != self.token_uri():
            return refuse("Invalid JWT: the aud claim must be %s." % self.token_uri())
        if self.client_email and claims.get("iss") != self.client_email:
            return refuse("Invalid JWT: the iss claim names no account of this server.")
        scopes = str(claims.get("scope", "")).split()
        if not any(s.endswith(suffix) for s in scopes for suffix in STORAGE_SCOPES):
            return 400, {"error": "invalid_scope", "error_description": "No storage scope was requested."}
        token = "ya29.emulator." + secrets.token_urlsafe(32)
        with self.lock:
            self.tokens[token] = now + self.token_ttl
            self.stats["tokens_issued"] += 1
        return 200, {"access_token": token, "expires_in": self.token_ttl, "token_type": "Bearer"}


def error_body(code, message, reason=None):
    error = {"code": code, "message": message}
    if reason:
        error["errors"] = [{"domain": "global", "reason": reason, "message": message}]
    return {"error": error}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "skippr-gcs-emulator"
    emulator = None  # set in main

    def log_message(self, *args):
        pass

    # --- plumbing -------------------------------------------------------------------------------------------------

    def body_length(self):
        return int(self.headers.get("Content-Length") or 0)

    def read_body(self):
        """The whole body, or None when the client went away before sending it all."""
        length = self.body_length()
        self.body_read = True
        data = self.rfile.read(length) if length else b""
        return data if len(data) == length else None

    def read_body_to(self, path):
        """Streams the body into `path`: (size, md5 digest), or None when it was cut short."""
        remaining = self.body_length()
        self.body_read = True
        md5 = hashlib.md5()
        size = 0
        with open(path, "wb") as f:
            while remaining > 0:
                block = self.rfile.read(min(remaining, 1 << 20))
                if not block:
                    break
                f.write(block)
                md5.update(block)
                size += len(block)
                remaining -= len(block)
        if remaining > 0:
            os.unlink(path)
            return None
        return size, md5.digest()

    def answer(self, status, body=None, headers=None):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        if body is not None and not isinstance(body, bytes):
            self.send_header("Content-Type", "application/json; charset=UTF-8")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if not self.body_read and self.body_length() > 0:
            self.close_connection = True  # the unread body would be taken for the next request
            self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def lose_answer(self):
        """Closes the connection without a word: the client cannot tell whether the upload happened."""
        self.close_connection = True

    def route(self):
        self.body_read = False
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        segments = url.path.split("/")[1:]
        return url.path, segments, query

    def authorize(self):
        if self.emulator.authorized(self.headers.get("Authorization")):
            return True
        self.emulator.count("unauthorized")
        self.answer(401, error_body(401, "Invalid Credentials", "authError"),
                    {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'})
        return False

    # --- methods --------------------------------------------------------------------------------------------------

    def do_GET(self):
        path, seg, query = self.route()
        if path == "/_emulator/stats":
            with self.emulator.lock:
                return self.answer(200, dict(self.emulator.stats))
        if path == "/_emulator/tokens":
            with self.emulator.lock:
                return self.answer(200, {"tokens": list(self.emulator.tokens)})
        if seg[:3] != ["storage", "v1", "b"] or len(seg) < 4:
            return self.answer(404, error_body(404, "Not Found"))
        if not self.authorize():
            return None
        bucket = urllib.parse.unquote(seg[3])
        if not self.emulator.store.bucket_exists(bucket):
            return self.answer(404, error_body(404, "The specified bucket does not exist.", "notFound"))
        if len(seg) == 4:
            return self.answer(200, {"kind": "storage#bucket", "id": bucket, "name": bucket, "location": "US",
                                     "storageClass": "STANDARD"})
        if len(seg) == 5 and seg[4] == "o":
            return self.list_objects(bucket, query)
        if len(seg) >= 6 and seg[4] == "o":
            return self.get_object(bucket, urllib.parse.unquote("/".join(seg[5:])), query)
        return self.answer(404, error_body(404, "Not Found"))

    def list_objects(self, bucket, query):
        prefix = query.get("prefix", "")
        size = min(int(query.get("maxResults") or self.emulator.page_size), self.emulator.page_size)
        after = b64url_decode(query["pageToken"]).decode() if query.get("pageToken") else None
        names = [n for n in self.emulator.store.names(bucket) if n.startswith(prefix) and (after is None or n > after)]
        page = names[:size]
        items = [m for m in (self.emulator.store.metadata(bucket, n) for n in page) if m]
        body = {"kind": "storage#objects"}
        if items:
            body["items"] = items
        if len(names) > size:
            body["nextPageToken"] = base64.urlsafe_b64encode(page[-1].encode()).decode().rstrip("=")
        return self.answer(200, body)

    def get_object(self, bucket, name, query):
        meta, data = self.emulator.store.open_object(bucket, name)
        if meta is None:
            return self.answer(404, error_body(404, "No such object: %s/%s" % (bucket, name), "notFound"))
        with data:
            if not precondition_holds(meta, query.get("ifGenerationMatch")):
                return self.answer(412, error_body(412, "At least one of the pre-conditions you specified did not "
                                                        "hold.", "conditionNotMet"))
            if query.get("alt") != "media":
                return self.answer(200, meta)
            self.send_response(200)
            self.send_header("Content-Type", meta["contentType"])
            self.send_header("Content-Length", meta["size"])
            self.send_header("x-goog-generation", meta["generation"])
            self.send_header("x-goog-metageneration", meta["metageneration"])
            self.send_header("x-goog-hash", "md5=" + meta["md5Hash"])
            self.end_headers()
            while True:
                block = data.read(1 << 20)
                if not block:
                    return None
                self.wfile.write(block)

    def do_DELETE(self):
        path, seg, query = self.route()
        if seg[:3] != ["storage", "v1", "b"] or len(seg) < 6 or seg[4] != "o":
            return self.answer(404, error_body(404, "Not Found"))
        if not self.authorize():
            return None
        bucket = urllib.parse.unquote(seg[3])
        if not self.emulator.store.bucket_exists(bucket):
            return self.answer(404, error_body(404, "The specified bucket does not exist.", "notFound"))
        name = urllib.parse.unquote("/".join(seg[5:]))
        outcome = self.emulator.store.delete(bucket, name, query.get("ifGenerationMatch"))
        if outcome == "missing":
            return self.answer(404, error_body(404, "No such object: %s/%s" % (bucket, name), "notFound"))
        if outcome == "precondition":
            return self.answer(412, error_body(412, "At least one of the pre-conditions you specified did not hold.",
                                               "conditionNotMet"))
        return self.answer(204)

    def do_POST(self):
        path, seg, query = self.route()
        if path == "/token":
            body = self.read_body()
            form = {k: v[-1] for k, v in urllib.parse.parse_qs((body or b"").decode()).items()}
            status, answer = self.emulator.grant(form)
            return self.answer(status, answer)
        if path == "/_emulator/faults":
            faults = json.loads(self.read_body() or b"{}")
            with self.emulator.lock:
                self.emulator.drop_after_insert = int(faults.get("drop_after_insert", 0))
            return self.answer(200, faults)
        if seg == ["storage", "v1", "b"]:
            if not self.authorize():
                return None
            resource = json.loads(self.read_body() or b"{}")
            if not self.emulator.store.create_bucket(resource.get("name", "")):
                return self.answer(409, error_body(409, "Your previous request to create the named bucket "
                                                        "succeeded and you already own it.", "conflict"))
            return self.answer(200, {"kind": "storage#bucket", "id": resource["name"], "name": resource["name"]})
        if seg[:4] == ["upload", "storage", "v1", "b"] and len(seg) == 6 and seg[5] == "o":
            if not self.authorize():
                return None
            bucket = urllib.parse.unquote(seg[4])
            if not self.emulator.store.bucket_exists(bucket):
                return self.answer(404, error_body(404, "The specified bucket does not exist.", "notFound"))
            kind = query.get("uploadType")
            if kind == "media":
                return self.media_upload(bucket, query)
            if kind == "resumable":
                return self.start_resumable(bucket, query)
            return self.answer(400, error_body(400, "uploadType %r is not emulated (media and resumable are)" % kind))
        return self.answer(404, error_body(404, "Not Found"))

    def media_upload(self, bucket, query):
        name = query.get("name")
        if not name:
            return self.answer(400, error_body(400, "Required parameter: name", "required"))
        temp = self.emulator.store.temp_path()
        received = self.read_body_to(temp)
        if received is None:
            return self.lose_answer()  # the client is gone; nothing became visible
        return self.finish_upload(bucket, name, temp, received, self.headers.get("Content-Type"),
                                  query.get("ifGenerationMatch"))

    def finish_upload(self, bucket, name, temp, received, content_type, if_generation_match):
        self.emulator.count("uploads")
        meta = self.emulator.store.commit(bucket, name, temp, received[0], received[1], content_type,
                                          if_generation_match)
        if meta is None:
            self.emulator.count("precondition_failed")
            return self.answer(412, error_body(412, "At least one of the pre-conditions you specified did not hold.",
                                               "conditionNotMet"))
        if self.emulator.should_drop():
            return self.lose_answer()
        return self.answer(200, meta)

    def start_resumable(self, bucket, query):
        body = self.read_body()
        resource = json.loads(body) if body else {}
        name = query.get("name") or resource.get("name")
        if not name:
            return self.answer(400, error_body(400, "Required parameter: name", "required"))
        precondition = query.get("ifGenerationMatch")
        if not precondition_holds(self.emulator.store.metadata(bucket, name), precondition):
            self.emulator.count("precondition_failed")
            return self.answer(412, error_body(412, "At least one of the pre-conditions you specified did not hold.",
                                               "conditionNotMet"))
        self.emulator.count("resumable_sessions")
        upload_id = secrets.token_urlsafe(24)
        temp = self.emulator.store.temp_path()
        open(temp, "wb").close()
        with self.emulator.lock:
            self.emulator.sessions[upload_id] = {
                "bucket": bucket, "name": name, "temp": temp, "size": 0, "md5": hashlib.md5(),
                "content_type": self.headers.get("X-Upload-Content-Type") or resource.get("contentType"),
                "precondition": precondition, "result": None, "lock": threading.Lock()}
        host = self.headers.get("Host") or "127.0.0.1:%d" % self.emulator.port
        location = "http://%s/upload/storage/v1/b/%s/o?uploadType=resumable&name=%s&upload_id=%s" % (
            host, urllib.parse.quote(bucket, safe=""), urllib.parse.quote(name, safe=""), upload_id)
        return self.answer(200, b"", {"Location": location})

    def do_PUT(self):
        path, seg, query = self.route()
        if seg[:4] != ["upload", "storage", "v1", "b"] or query.get("uploadType") != "resumable":
            return self.answer(404, error_body(404, "Not Found"))
        # The session URI is its own authorization, as in GCS.
        with self.emulator.lock:
            session = self.emulator.sessions.get(query.get("upload_id", ""))
        if session is None:
            return self.answer(404, error_body(404, "No such upload session.", "notFound"))
        match = re.fullmatch(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)", self.headers.get("Content-Range", "").strip())
        if not match:
            return self.answer(400, error_body(400, "Content-Range must be bytes a-b/total, a-b/* or */total"))
        body = self.read_body()
        if body is None:
            return self.lose_answer()  # cut short: nothing of this chunk is kept
        with session["lock"]:
            return self.resume(session, match, body)

    def resume(self, session, match, body):
        if session["result"] is not None:  # finished before: the same answer again
            status, meta = session["result"]
            return self.answer(status, meta)
        first, last, total = match.group(1), match.group(2), match.group(3)
        total = None if total == "*" else int(total)
        if first is not None:
            first, last = int(first), int(last)
            if last - first + 1 != len(body):
                return self.answer(400, error_body(400, "Content-Range does not match the body's length"))
            if first > session["size"]:
                return self.answer(400, error_body(400, "Content-Range starts after the bytes received so far"))
            final = total is not None and last + 1 == total
            if not final and len(body) % CHUNK_QUANTUM != 0:
                return self.answer(400, error_body(400, "A chunk but the last must be a multiple of 256 KiB",
                                                   "invalid"))
            self.emulator.count("chunks")
            fresh = body[session["size"] - first:]
            with open(session["temp"], "ab") as f:
                f.write(fresh)
            session["md5"].update(fresh)
            session["size"] += len(fresh)
        if total is not None and session["size"] > total:
            return self.answer(400, error_body(400, "More bytes than the total were sent"))
        if total is None or session["size"] < total:
            headers = {"Range": "bytes=0-%d" % (session["size"] - 1)} if session["size"] else {}
            headers["X-Range-MD5"] = base64.b64encode(session["md5"].digest()).decode()
            return self.answer(308, b"", headers)
        self.emulator.count("uploads")
        meta = self.emulator.store.commit(session["bucket"], session["name"], session["temp"], session["size"],
                                          session["md5"].digest(), session["content_type"], session["precondition"])
        if meta is None:
            self.emulator.count("precondition_failed")
            session["result"] = (412, error_body(412, "At least one of the pre-conditions you specified did not hold.",
                                                 "conditionNotMet"))
            return self.answer(*session["result"])
        session["result"] = (200, meta)
        if self.emulator.should_drop():
            return self.lose_answer()
        return self.answer(200, meta)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--root", required=True, help="the folder buckets and objects are kept in")
    parser.add_argument("--public-key", required=True, help="the service account's RSA public key (PEM)")
    parser.add_argument("--client-email", default="", help="the service account (the JWT's iss)")
    parser.add_argument("--admin-token", default="", help="a bearer token always accepted (for test support)")
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--page-size", type=int, default=50)
    args = parser.parse_args()
    Handler.emulator = Emulator(args)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
