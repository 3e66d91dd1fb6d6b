#!/usr/bin/env python3
"""A front for moto_server that checks what AWS checks before it acts: Signature V4 (computed by botocore's signer,
independently of skipprd's code), the access key, the session token and its expiry, the clock, and S3's payload hash.
A request that passes is forwarded to moto unchanged; one that fails gets the error AWS gives, as S3 (XML) or as the
JSON protocol (DynamoDB, Glue) words it, and never reaches moto.

It also makes moto's conditional writes atomic, as the services decide them: moto checks a condition and then writes,
so concurrent UpdateItems with the same condition (two lease takeovers) or PUTs with the same If-None-Match could both
win. Every DynamoDB call, and every S3 request with If-None-Match or If-Match, passes one at a time.

Usage: aws_gate.py --upstream http://127.0.0.1:PORT --port-file FILE [--credential-seconds N]

Keys: "testing"/"testing" is a permanent key (moto's default, what the tests' environment holds). Others come from
  POST /__gate/keys            {"seconds": N, "without_list_bucket": true} (both optional) -> {"AccessKeyId",
                               "SecretAccessKey", "Token", "Expiration"}; without_list_bucket: a key whose policy
                               lacks s3:ListBucket (listings and bucket HEADs 403, a missing key 403, not 404)
  GET  /__gate/credentials     the ECS/EKS container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI), with
                               Authorization: the token given by --container-token; keys of --credential-seconds
  POST /__gate/expire          every temporary key expires now (revoked, or AWS's clock ahead of the client's)
  POST / Action=AssumeRoleWithWebIdentity   STS's unsigned call, answered with a key of --credential-seconds
  GET  /__gate/stats           {"accepted": N, "refused": {code: N}, "refusals": [last 20], "credentials_issued": N}
  DELETE /__gate/stats         zeroes the counters

What it does not check that AWS does: policies and permissions (every valid key may do everything, but the
s3:ListBucket case above), presigned URLs
(query-string auth is refused), chunk signatures of aws-chunked uploads (the seed signature is checked, the chunks
are not), virtual-hosted addressing, and the region (any region in the scope is accepted if the signature matches).
"""

import argparse
import datetime
import hashlib
import json
import os
import secrets
import sys
import threading
import urllib.parse

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_proxy import Handler, Server, serve  # noqa: E402  (the forwarding half is shared)

GATE_PATH = "/__gate/"
SKEW = datetime.timedelta(minutes=15)  # AWS refuses a request signed further from its clock (RequestTimeTooSkewed)
# Payload hashes that say the body is not hashed into the signature (S3 only).
UNHASHED_PAYLOADS = {"UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                     "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def aws_quote(text):
    """RFC 3986 encoding as SigV4 wants it: every byte but the unreserved ones, as %XX (upper case)."""
    return urllib.parse.quote(text, safe="-_.~")


def canonical_query(query):
    """What AWS computes from the query it received: each name and value decoded, encoded again, sorted by name
    then value. A client whose own canonical form differs (unsorted, encoded otherwise) signs something else."""
    pairs = []
    for part in query.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((aws_quote(urllib.parse.unquote(name)), aws_quote(urllib.parse.unquote(value))))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def canonical_s3_path(path):
    """S3 encodes each path segment once: decoded as received, encoded again."""
    return "/".join(aws_quote(urllib.parse.unquote(segment)) for segment in path.split("/"))


class Refusal(Exception):
    def __init__(self, code, message, s3_status, json_status=400):
        super().__init__(message)
        self.code, self.message, self.s3_status, self.json_status = code, message, s3_status, json_status


class Keys:
    def __init__(self, credential_seconds):
        self.lock = threading.Lock()
        self.credential_seconds = credential_seconds
        self.keys = {"testing": ("testing", None, None)}  # id -> (secret, session token, expiry)
        self.without_list_bucket = set()  # ids whose policy lacks s3:ListBucket
        self.issued = 0

    def issue(self, seconds=None, without_list_bucket=False):
        seconds = self.credential_seconds if seconds is None else seconds
        key_id = "ASIA" + secrets.token_hex(8).upper()
        secret, token = secrets.token_urlsafe(30), secrets.token_urlsafe(60)
        expiry = utc_now() + datetime.timedelta(seconds=seconds) if seconds else None
        with self.lock:
            self.keys[key_id] = (secret, token if seconds else None, expiry)
            self.issued += 1
            if without_list_bucket:
                self.without_list_bucket.add(key_id)
        answer = {"AccessKeyId": key_id, "SecretAccessKey": secret}
        if seconds:
            answer["Token"] = token
            answer["Expiration"] = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
        return answer

    def expire_all(self):
        """Every temporary key expires now (as if revoked, or AWS's clock were ahead): the count."""
        with self.lock:
            temporary = [key_id for key_id, (_, token, _) in self.keys.items() if token is not None]
            now = utc_now()
            for key_id in temporary:
                secret, token, _ = self.keys[key_id]
                self.keys[key_id] = (secret, token, now)
            return len(temporary)

    def get(self, key_id):
        with self.lock:
            return self.keys.get(key_id)


def parse_authorization(value):
    scheme, _, rest = value.partition(" ")
    if scheme != "AWS4-HMAC-SHA256":
        raise Refusal("AuthorizationHeaderMalformed" if scheme else "AccessDenied",
                      f"unsupported authorization scheme {scheme!r}", 400 if scheme else 403)
    fields = {}
    for item in rest.split(","):
        name, _, field = item.strip().partition("=")
        fields[name] = field
    try:
        key_id, date, region, service, terminal = fields["Credential"].split("/")
        return key_id, date, region, service, terminal, fields["SignedHeaders"], fields["Signature"]
    except (KeyError, ValueError):
        raise Refusal("AuthorizationHeaderMalformed", "the Authorization header is malformed", 400)


def check(keys, method, raw_path, headers, body):
    """The access key id of a request signed right, or raises Refusal with what AWS would answer."""
    authorization = headers.get("Authorization")
    if not authorization:
        if "X-Amz-Signature" in raw_path:
            raise Refusal("AccessDenied", "presigned URLs are not accepted by this gate", 403)
        raise Refusal("AccessDenied", "Anonymous access is forbidden for this operation", 403)
    key_id, date, region, service, terminal, signed_headers, signature = parse_authorization(authorization)
    key = keys.get(key_id)
    if key is None:
        raise Refusal("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.", 403)
    secret, token, expiry = key
    stamp = headers.get("X-Amz-Date", "")
    try:
        signed_at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        raise Refusal("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header", 403)
    if abs(utc_now() - signed_at) > SKEW:
        raise Refusal("RequestTimeTooSkewed", "The difference between the request time and the current time is too "
                      "large.", 403)
    if date != stamp[:8] or terminal != "aws4_request":
        raise Refusal("AuthorizationHeaderMalformed", "the credential scope does not match the request date", 400)
    if token is None and headers.get("X-Amz-Security-Token") is not None:
        raise Refusal("InvalidToken", "The provided token is malformed or otherwise invalid.", 400)
    if token is not None:
        sent_token = headers.get("X-Amz-Security-Token")
        if sent_token is None:
            raise Refusal("InvalidToken", "The provided token is malformed or otherwise invalid.", 400)
        if not secrets.compare_digest(sent_token, token):
            raise Refusal("InvalidToken", "The provided token is malformed or otherwise invalid.", 400)
        if utc_now() >= expiry:
            raise Refusal("ExpiredToken", "The provided token has expired.", 400)
    payload_hash = headers.get("X-Amz-Content-SHA256")
    if service == "s3":
        if payload_hash is None:
            raise Refusal("InvalidRequest", "Missing required header for this request: x-amz-content-sha256", 400)
        if payload_hash not in UNHASHED_PAYLOADS and payload_hash != hashlib.sha256(body).hexdigest():
            raise Refusal("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match "
                          "what was computed.", 400)
    elif payload_hash is not None and payload_hash != hashlib.sha256(body).hexdigest():
        raise Refusal("InvalidSignatureException", "The payload hash does not match the body.", 400)

    path, _, query = raw_path.partition("?")
    if service == "s3":
        path = canonical_s3_path(path)
    host = headers.get("Host", "")
    names = signed_headers.split(";")
    request = AWSRequest(method=method, url=f"http://{host}{path}" + (f"?{canonical_query(query)}" if query else ""),
                         headers={name: headers.get(name, "") for name in names if name != "host"}, data=body)
    if "host" in names:
        request.headers["Host"] = host
    request.context["timestamp"] = stamp
    signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(Credentials(key_id, secret, token), service, region)
    if signer.signed_headers(signer.headers_to_sign(request)) != signed_headers:
        raise Refusal("SignatureDoesNotMatch", "the signed headers are not what the signer signs (host is required)",
                      403)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not secrets.compare_digest(expected, signature):
        raise Refusal("SignatureDoesNotMatch", "The request signature we calculated does not match the signature "
                      "you provided. Check your key and signing method.", 403)
    return key_id


JSON_CODES = {  # what the JSON-protocol services call the S3 codes above
    "InvalidAccessKeyId": "UnrecognizedClientException",
    "InvalidToken": "UnrecognizedClientException",
    "ExpiredToken": "ExpiredTokenException",
    "SignatureDoesNotMatch": "InvalidSignatureException",
    "RequestTimeTooSkewed": "InvalidSignatureException",
    "AccessDenied": "MissingAuthenticationTokenException",
    "AuthorizationHeaderMalformed": "IncompleteSignatureException",
}


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.clear()

    def clear(self):
        self.accepted, self.refused, self.refusals = 0, {}, []

    def count(self, refusal=None, what=""):
        with self.lock:
            if refusal is None:
                self.accepted += 1
                return
            self.refused[refusal.code] = self.refused.get(refusal.code, 0) + 1
            self.refusals = (self.refusals + [f"{refusal.code}: {what}: {refusal.message}"])[-20:]


class GateHandler(Handler):
    server_version = "aws_gate"

    def do_any(self):
        body = self.read_body()
        if body is None:
            return
        if self.path.startswith(GATE_PATH):
            self.gate_control(self.path[len(GATE_PATH):].split("?", 1)[0], body)
            return
        target = self.headers.get("X-Amz-Target", "")
        gate = self.server
        form = urllib.parse.parse_qs(body.decode("latin-1")) if self.command == "POST" and not target else {}
        if form.get("Action") == ["AssumeRoleWithWebIdentity"] and "Authorization" not in self.headers:
            self.assume_role_with_web_identity(form)
            return
        try:
            key_id = check(gate.keys, self.command, self.path, self.headers, body)
        except Refusal as refusal:
            gate.stats.count(refusal, f"{self.command} {self.path.split('?', 1)[0]} {target}".strip())
            self.refuse(refusal, target)
            return
        gate.stats.count()
        # A policy without s3:ListBucket: no listing, no bucket HEAD, and a missing key is 403, not 404 (AWS hides
        # whether it exists from who may not list).
        no_list = not target and key_id in gate.keys.without_list_bucket
        denied = Refusal("AccessDenied", "Access Denied", 403)
        if no_list and self.command in ("GET", "HEAD") and "/" not in self.path.split("?", 1)[0].strip("/"):
            self.refuse(denied, target)
            return
        conditional = target.startswith("DynamoDB_") or "If-None-Match" in self.headers or "If-Match" in self.headers
        if conditional:
            with gate.conditional_lock:
                response = self.forward(body)
        else:
            response = self.forward(body)
        if response is not None and no_list and response[0] == 404:
            self.refuse(denied, target)
        elif response is not None:
            self.relay(*response)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_any

    def refuse(self, refusal, target):
        if target:
            content_type = "application/x-amz-json-1.0"
            body = json.dumps({"__type": f"com.amazon.coral.service#{JSON_CODES.get(refusal.code, refusal.code)}",
                               "message": refusal.message})
            status = refusal.json_status
        else:
            content_type = "application/xml"
            body = ('<?xml version="1.0" encoding="UTF-8"?>'
                    f"<Error><Code>{refusal.code}</Code><Message>{refusal.message}</Message>"
                    f"<RequestId>{secrets.token_hex(8).upper()}</RequestId></Error>")
            status = refusal.s3_status
        self.send_bytes(status, None, [("Content-Type", content_type)], body.encode())

    def assume_role_with_web_identity(self, form):
        """STS's one call without a signature: the gate answers it with a key of its own (moto's would be unknown
        here). The token is not verified (any non-empty one is accepted); the lifetime is --credential-seconds."""
        gate = self.server
        if not form.get("RoleArn") or not form.get("WebIdentityToken") or not form.get("RoleSessionName"):
            body = ('<ErrorResponse><Error><Type>Sender</Type><Code>MissingParameter</Code><Message>RoleArn, '
                    'RoleSessionName and WebIdentityToken are required</Message></Error></ErrorResponse>')
            self.send_bytes(400, None, [("Content-Type", "text/xml")], body.encode())
            return
        key = gate.keys.issue()
        body = ('<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                "<AssumeRoleWithWebIdentityResult><Credentials>"
                f"<SessionToken>{key['Token']}</SessionToken><SecretAccessKey>{key['SecretAccessKey']}"
                f"</SecretAccessKey><Expiration>{key['Expiration']}</Expiration>"
                f"<AccessKeyId>{key['AccessKeyId']}</AccessKeyId></Credentials>"
                f"<AssumedRoleUser><Arn>{form['RoleArn'][0]}/{form['RoleSessionName'][0]}</Arn></AssumedRoleUser>"
                "</AssumeRoleWithWebIdentityResult>"
                f"<ResponseMetadata><RequestId>{secrets.token_hex(8)}</RequestId></ResponseMetadata>"
                "</AssumeRoleWithWebIdentityResponse>")
        self.send_bytes(200, None, [("Content-Type", "text/xml")], body.encode())

    def answer(self, status, value):
        self.send_bytes(status, None, [("Content-Type", "application/json")], json.dumps(value).encode())

    def gate_control(self, what, body):
        gate = self.server
        if what == "keys" and self.command == "POST":
            spec = json.loads(body or b"{}")
            self.answer(200, gate.keys.issue(spec.get("seconds"), bool(spec.get("without_list_bucket"))))
        elif what == "credentials" and self.command == "GET":
            if self.headers.get("Authorization") != gate.container_token:
                self.answer(401, {"message": "the authorization token is missing or wrong"})
                return
            self.answer(200, {**gate.keys.issue(), "RoleArn": "arn:aws:iam::123456789012:role/skipprd-test"})
        elif what == "expire" and self.command == "POST":
            self.answer(200, {"expired": gate.keys.expire_all()})
        elif what == "stats" and self.command == "GET":
            with gate.stats.lock:
                self.answer(200, {"accepted": gate.stats.accepted, "refused": gate.stats.refused,
                                  "refusals": gate.stats.refusals, "credentials_issued": gate.keys.issued})
        elif what == "stats" and self.command == "DELETE":
            with gate.stats.lock:
                gate.stats.clear()
            self.answer(200, {})
        else:
            self.answer(404, {"message": f"no {self.command} {GATE_PATH}{what}"})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="moto_server's http://host:port")
    parser.add_argument("--port-file", required=True, help="receives the listening port")
    parser.add_argument("--credential-seconds", type=int, default=3600, help="lifetime of container credentials")
    parser.add_argument("--container-token", default="gate-container-token")
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), GateHandler)
    server.keys = Keys(args.credential_seconds)
    server.stats = Stats()
    server.conditional_lock = threading.Lock()
    server.container_token = args.container_token
    serve(server, args.upstream, args.port_file)


if __name__ == "__main__":
    main()
