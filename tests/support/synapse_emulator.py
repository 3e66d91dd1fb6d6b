#!/usr/bin/env python3
"""A Synapse (dedicated SQL pool) emulator for tests: the TDS protocol, with the statements run on a real PostgreSQL.

Usage: synapse_emulator.py --pg-port PORT --pg-user U --pg-password P --user U --password P --port-file FILE
                           [--drop-commit-every N]

Azure Synapse's dedicated SQL pools speak TDS 7.4 ([MS-TDS]), which is what FreeTDS's ODBC driver, and so the
Synapse sink, uses. This emulator implements the messages that driver and the sink exchange, as [MS-TDS] defines them:

- PRELOGIN (packet 0x12), answered with VERSION, ENCRYPTION = ENCRYPT_NOT_SUP, INSTOPT, THREADID and MARS. A client
  that requires encryption (ENCRYPT_ON / ENCRYPT_REQ) is disconnected, as a server without a certificate does.
- LOGIN7 (0x10): the user name and the password (de-obfuscated: XOR 0xA5, nibbles swapped) are checked against
  --user / --password; a mismatch is error 18456 "Login failed for user '<name>'." (class 14). The database named in
  the login is the PostgreSQL database the session runs in. Answered with ENVCHANGE (database, collation, packet
  size), LOGINACK (TDS 7.4) and DONE.
- SQL Batch (0x01): ALL_HEADERS skipped, the UCS-2 text translated (below) and run on PostgreSQL. A result set is
  COLMETADATA (every column NVARCHAR(4000), nullable), ROW tokens and DONE with DONE_COUNT; a statement without rows is
  DONE with its row count; a failure is ERROR (class 16) and DONE with DONE_ERROR. Answers larger than the negotiated
  packet size go in several packets, EOM on the last.
- Attention (0x06) is acknowledged with DONE / DONE_ATTN.

The dialect differences live in `translate` (T-SQL as the sink writes it -> PostgreSQL): [bracket] names, N'...'
literals, SELECT TOP (n), IF OBJECT_ID(...) IS NULL CREATE TABLE, IF SCHEMA_ID(...) IS NULL EXEC(N'CREATE SCHEMA ...'),
IF @@TRANCOUNT > 0 ROLLBACK, BEGIN/COMMIT/ROLLBACK TRANSACTION, the types (NVARCHAR, DATETIME2, BIT, FLOAT),
SYSUTCDATETIME(), SET XACT_ABORT ON (PostgreSQL aborts a transaction at its first error anyway, which is what
XACT_ABORT ON makes SQL Server do). And `COPY INTO table (columns) FROM 'https://<account>/<container>/<blob>' WITH
(FILE_TYPE = 'CSV', CREDENTIAL = (IDENTITY = 'Storage Account Key' | 'Shared Access Signature', SECRET = '...'),
COMPRESSION = 'GZIP', FIRSTROW = 2)`: the blob is read from the storage endpoint (azurite) with that credential
(Shared Key signed here, or the SAS appended), gunzipped, and streamed into the session's transaction with
PostgreSQL's COPY FROM STDIN. A wrong credential or a missing blob fail the statement with the storage service's
status, as Synapse reports them (error 13822), never with the secret.

Not covered: TLS, MARS, RPC requests and prepared statements, the transaction manager request (the sink sends its
transactions as SQL), other types than NVARCHAR in results, Synapse's distributions and column store, T-SQL's
statement-level (non-XACT_ABORT) error semantics, and SQL Server's own parsing of CSV values (PostgreSQL's is used).

Also emulated, as a dedicated SQL pool does them: DDL inside a user transaction is refused ("Operation cannot be
performed within a transaction."), a DEFAULT must be a constant, PostgreSQL's errors carry SQL Server's numbers
(208 invalid object, 207 invalid column, 102 syntax, 8152 truncation, 1205 deadlock; 50000 otherwise), and
SESSION_ID(), SUSER_SNAME(), sys.dm_pdw_exec_sessions and sys.dm_pdw_exec_requests answer from this emulator's
sessions (each connection's last request, Running while it works), filled into temp tables before the query runs.

Faults: with --drop-commit-every N, every Nth COMMIT is run by PostgreSQL and then the client's connection is closed
before the answer: the client cannot know whether its transaction committed (an unknown outcome). With
--late-commit-every N, every Nth COMMIT is answered by closing the connection first and committing 1.5 s later,
its request Running meanwhile: a client that reconnects and reads the ledger at once sees the batch not landed.
"""

import argparse
import base64
import datetime
import gzip
import hashlib
import hmac
import io
import re
import struct
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

import psycopg2
import psycopg2.extensions

from loopback_listener import serve_connections

# Packet types ([MS-TDS] 2.2.3.1.1).
SQL_BATCH = 0x01
ATTENTION = 0x06
TABULAR_RESULT = 0x04
LOGIN7 = 0x10
PRELOGIN = 0x12
STATUS_EOM = 0x01

# Tokens ([MS-TDS] 2.2.7).
COLMETADATA = 0x81
ERROR = 0xAA
LOGINACK = 0xAD
ROW = 0xD1
ENVCHANGE = 0xE3
DONE = 0xFD
DONE_MORE, DONE_ERROR, DONE_COUNT, DONE_ATTN = 0x01, 0x02, 0x10, 0x20

NVARCHAR = 0xE7
COLLATION = bytes([0x09, 0x04, 0xD0, 0x00, 0x34])  # Latin1_General_CI_AS (LCID 0x0409)
TDS74 = 0x74000004
ENCRYPT_OFF, ENCRYPT_ON, ENCRYPT_NOT_SUP, ENCRYPT_REQ = 0x00, 0x01, 0x02, 0x03
MAX_NVARCHAR_CHARS = 4000


def ucs2(text):
    return text.encode("utf-16-le")


def b_varchar(text):
    data = ucs2(text)
    if len(data) // 2 > 255:
        raise ValueError("a name of more than 255 UTF-16 units does not fit a B_VARCHAR")
    return bytes([len(data) // 2]) + data


def us_varchar(text):
    data = ucs2(text)[:2 * 65535]
    return struct.pack("<H", len(data) // 2) + data


def done(status=0, count=0):
    return struct.pack("<BHHQ", DONE, status, 0xC1, count)


def error_token(number, message, klass=16, state=1):
    body = struct.pack("<iBB", number, state, klass) + us_varchar(message) + b_varchar("synapse-emulator") + \
        b_varchar("") + struct.pack("<i", 1)
    return struct.pack("<BH", ERROR, len(body)) + body


def envchange(kind, new, old=b""):
    body = bytes([kind]) + new + old
    return struct.pack("<BH", ENVCHANGE, len(body)) + body


def result_set(columns, rows):
    out = bytearray(struct.pack("<BH", COLMETADATA, len(columns)))
    for name in columns:
        out += struct.pack("<IHB", 0, 0x0001, NVARCHAR) + struct.pack("<H", MAX_NVARCHAR_CHARS * 2) + COLLATION
        out += b_varchar(name)
    for row in rows:
        out.append(ROW)
        for value in row:
            if value is None:
                out += struct.pack("<H", 0xFFFF)
                continue
            text = value if isinstance(value, str) else str(value)
            if len(text) > MAX_NVARCHAR_CHARS:
                raise ValueError("a value of {} characters does not fit this emulator's NVARCHAR(4000) results"
                                 .format(len(text)))
            data = ucs2(text)
            out += struct.pack("<H", len(data)) + data
    return bytes(out)


# ---- T-SQL -> PostgreSQL, in one place -------------------------------------------------------------------------

TYPES = [
    (re.compile(r"\bNVARCHAR\s*\(\s*MAX\s*\)", re.I), "TEXT"),
    (re.compile(r"\bNVARCHAR\b", re.I), "VARCHAR"),
    (re.compile(r"\bDATETIME2\b", re.I), "TIMESTAMP"),
    (re.compile(r"\bBIT\b", re.I), "BOOLEAN"),
    (re.compile(r"\bFLOAT\b", re.I), "DOUBLE PRECISION"),
    (re.compile(r"\bSYSUTCDATETIME\s*\(\s*\)", re.I), "(now() AT TIME ZONE 'utc')"),
]


def outside_literals(sql, change):
    """Applies `change` to the parts of `sql` outside string literals; [names] become "names" there first, and
    N'...' literals lose their N."""
    out, i, code = [], 0, []

    def flush():
        if code:
            out.append(change("".join(code)))
            code.clear()

    while i < len(sql):
        c = sql[i]
        n_literal = c in "Nn" and sql[i + 1:i + 2] == "'" and (i == 0 or not (sql[i - 1].isalnum() or
                                                                              sql[i - 1] == "_"))
        if c == "'" or n_literal:
            flush()
            j = i + (2 if n_literal else 1)
            while True:
                k = sql.index("'", j)
                if sql[k + 1:k + 2] == "'":
                    j = k + 2
                    continue
                break
            out.append(sql[i + (1 if n_literal else 0):k + 1])
            i = k + 1
        elif c == "[":
            k = sql.index("]", i)
            code.append('"' + sql[i + 1:k].replace('"', '""') + '"')
            i = k + 1
        else:
            code.append(c)
            i += 1
    flush()
    return "".join(out)


def translate(sql):
    """The PostgreSQL statement for one T-SQL statement, or None for one that has nothing to do here."""
    s = sql.strip().rstrip(";")
    if re.fullmatch(r"SET\s+\w+\s+(ON|OFF)", s, re.I):
        return None
    m = re.fullmatch(r"(?:IF\s+@@TRANCOUNT\s*>\s*0\s+)?(BEGIN|COMMIT|ROLLBACK)\s+TRAN(SACTION)?", s, re.I)
    if m:
        return m.group(1).upper()
    m = re.fullmatch(r"IF\s+SCHEMA_ID\s*\(\s*N?'(?:[^']|'')*'\s*\)\s+IS\s+NULL\s+EXEC\s*\(\s*N?'(.*)'\s*\)", s,
                     re.I | re.S)
    if m:
        inner = m.group(1).replace("''", "'")
        return outside_literals(re.sub(r"^\s*CREATE\s+SCHEMA\b", "CREATE SCHEMA IF NOT EXISTS", inner, flags=re.I),
                                lambda code: code)
    m = re.fullmatch(r"IF\s+OBJECT_ID\s*\(\s*N?'(?:[^']|'')*'(?:\s*,\s*N?'U')?\s*\)\s+IS\s+NULL\s+(CREATE\s+TABLE\b.*)",
                     s, re.I | re.S)
    if m:
        s = re.sub(r"^CREATE\s+TABLE\b", "CREATE TABLE IF NOT EXISTS", m.group(1), flags=re.I)
    top = re.match(r"^SELECT\s+TOP\s*\(?\s*(\d+)\s*\)?\s+", s, re.I)
    if top:
        s = "SELECT " + s[top.end():] + " LIMIT " + top.group(1)

    def code(part):
        for pattern, replacement in TYPES:
            part = pattern.sub(replacement, part)
        return part

    return outside_literals(s, code)


COPY_INTO = re.compile(
    r"^\s*COPY\s+INTO\s+(?P<table>.+?)\s*(?:\((?P<columns>[^)]*)\))?\s+FROM\s+'(?P<url>https?://[^']+)'\s+WITH\s*"
    r"\((?P<options>.*)\)\s*;?\s*$", re.I | re.S)
OPTION = re.compile(r"\b(?P<name>FILE_TYPE|COMPRESSION|FIRSTROW|FIELDQUOTE|FIELDTERMINATOR|ROWTERMINATOR|ENCODING)\s*="
                    r"\s*(?P<value>'(?:[^']|'')*'|\d+)", re.I)
CREDENTIAL = re.compile(r"\bCREDENTIAL\s*=\s*\(\s*IDENTITY\s*=\s*'(?P<identity>[^']*)'\s*,\s*SECRET\s*=\s*"
                        r"'(?P<secret>(?:[^']|'')*)'\s*\)", re.I)


# SQL Server's error numbers for the PostgreSQL errors the sink can meet, so a client classifies them as it would
# Synapse's (a wrong name is not an outage).
ERROR_NUMBERS = {"42P01": (208, "Invalid object name"), "42703": (207, "Invalid column name"),
                 "42601": (102, "Incorrect syntax"), "42501": (229, "The permission was denied"),
                 "22001": (8152, "String or binary data would be truncated"), "40001": (1205, "Deadlock"),
                 "40P01": (1205, "Deadlock")}
DDL = re.compile(r"^\s*(CREATE|ALTER|DROP)\s+(TABLE|SCHEMA)\b", re.I)
NON_CONSTANT_DEFAULT = re.compile(r"\bDEFAULT\s+\(?\s*[A-Za-z_]\w*\s*\(", re.I)


class SqlFailure(Exception):
    def __init__(self, number, message):
        super().__init__(message)
        self.number = number


def shared_key_get(url, account, key):
    """GET of a blob with Azure Storage's Shared Key authorization (the "Authorize with Shared Key" string-to-sign for
    a GET without body or conditional headers)."""
    parsed = urllib.parse.urlsplit(url)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")
    version = "2021-12-02"
    canonical_headers = "x-ms-date:{}\nx-ms-version:{}\n".format(date, version)
    # "/<account><path>": a path-style endpoint (http://host:port/<account>/<container>/<blob>, azurite's) names the
    # account twice, as the specification says for the emulator.
    canonical_resource = "/" + account + parsed.path
    string_to_sign = "GET\n" + "\n" * 11 + canonical_headers + canonical_resource
    signature = base64.b64encode(hmac.new(base64.b64decode(key), string_to_sign.encode("utf-8"),
                                          hashlib.sha256).digest()).decode()
    request = urllib.request.Request(url, headers={"x-ms-date": date, "x-ms-version": version,
                                                   "Authorization": "SharedKey {}:{}".format(account, signature)})
    return urllib.request.urlopen(request, timeout=30).read()


def account_of(url):
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if host.endswith(".blob.core.windows.net"):
        return host.split(".")[0]
    return parsed.path.strip("/").split("/")[0]  # path-style: the first segment


class Session:
    """One TDS connection. Its entry in `sessions` backs sys.dm_pdw_exec_sessions and sys.dm_pdw_exec_requests (the
    session's last request, with status Running while the server works on it), which other sessions may query."""
    commits = 0
    commits_lock = threading.Lock()
    sessions = {}  # session_id -> {"login": ..., "status": ..., "command": ..., "request_status": ...}
    sessions_lock = threading.Lock()
    next_id = 0

    def __init__(self, client, args):
        self.client = client
        self.args = args
        self.packet_size = 4096
        self.pg = None
        with Session.sessions_lock:
            Session.next_id += 1
            self.session_id = "SID{}".format(Session.next_id)
        self.login_name = ""

    def set_request(self, command, status):
        with Session.sessions_lock:
            entry = Session.sessions.setdefault(self.session_id, {"login": self.login_name})
            entry.update(status="Active", command=command, request_status=status)

    def end_session(self):
        with Session.sessions_lock:
            entry = Session.sessions.get(self.session_id)
            if entry is not None:
                entry["status"] = "Closed"
                if entry.get("request_status") == "Running":
                    entry["request_status"] = "Failed"  # its client is gone: the server rolls it back

    # ---- packets --------------------------------------------------------------------------------------------
    def read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.client.recv(n - len(data))
            if not chunk:
                raise ConnectionError("client closed")
            data += chunk
        return data

    def read_message(self):
        payload = b""
        while True:
            header = self.read_exact(8)
            kind, status, length = header[0], header[1], struct.unpack(">H", header[2:4])[0]
            payload += self.read_exact(length - 8)
            if status & STATUS_EOM:
                return kind, payload

    def send_message(self, kind, payload):
        room = self.packet_size - 8
        chunks = [payload[i:i + room] for i in range(0, len(payload), room)] or [b""]
        for n, chunk in enumerate(chunks):
            status = STATUS_EOM if n == len(chunks) - 1 else 0
            self.client.sendall(struct.pack(">BBHHBB", kind, status, len(chunk) + 8, 0, (n + 1) % 256, 0) + chunk)

    # ---- the session ----------------------------------------------------------------------------------------
    def run(self):
        try:
            kind, payload = self.read_message()
            if kind != PRELOGIN or not self.prelogin(payload):
                return
            kind, payload = self.read_message()
            if kind != LOGIN7 or not self.login(payload):
                return
            while True:
                kind, payload = self.read_message()
                if kind == SQL_BATCH:
                    total = struct.unpack("<I", payload[:4])[0]  # ALL_HEADERS, TDS 7.2 and later
                    if not self.batch(payload[total:].decode("utf-16-le")):
                        return
                elif kind == ATTENTION:
                    self.send_message(TABULAR_RESULT, done(DONE_ATTN))
                else:
                    print("unsupported TDS packet type 0x{:02x}".format(kind), file=sys.stderr, flush=True)
                    self.send_message(TABULAR_RESULT, error_token(
                        50000, "this emulator does not implement TDS packet type 0x{:02x}".format(kind)) +
                        done(DONE_ERROR))
        except (ConnectionError, OSError):
            pass
        finally:
            self.end_session()
            for closable in (self.client, self.pg):
                if closable is not None:
                    try:
                        closable.close()
                    except Exception:
                        pass

    def prelogin(self, payload):
        encryption = ENCRYPT_OFF
        i = 0
        while payload[i] != 0xFF:
            token = payload[i]
            offset, length = struct.unpack(">HH", payload[i + 1:i + 5])
            if token == 0x01 and length >= 1:
                encryption = payload[offset]
            i += 5
        options = [(0x00, struct.pack(">IH", 0x0C000FA0, 0)), (0x01, bytes([ENCRYPT_NOT_SUP])), (0x02, b"\x00"),
                   (0x03, b""), (0x04, b"\x00")]
        offset = len(options) * 5 + 1
        table, data = b"", b""
        for token, value in options:
            table += struct.pack(">BHH", token, offset + len(data), len(value))
            data += value
        self.send_message(TABULAR_RESULT, table + b"\xff" + data)
        if encryption in (ENCRYPT_ON, ENCRYPT_REQ):
            print("a client that requires encryption was disconnected", file=sys.stderr, flush=True)
            return False
        return True

    def login(self, payload):
        requested_packet = struct.unpack("<I", payload[8:12])[0]

        def field(n):
            offset, length = struct.unpack("<HH", payload[36 + 4 * n:40 + 4 * n])
            return payload[offset:offset + 2 * length]

        user = field(1).decode("utf-16-le")
        password = bytes((((b ^ 0xA5) & 0x0F) << 4) | ((b ^ 0xA5) >> 4) for b in field(2)).decode("utf-16-le")
        database = field(8).decode("utf-16-le") or "postgres"
        self.login_name = user
        if user != self.args.user or password != self.args.password:
            self.send_message(TABULAR_RESULT, error_token(18456, "Login failed for user '{}'.".format(user), 14) +
                              done(DONE_ERROR))
            return False
        try:
            self.pg = psycopg2.connect(host="127.0.0.1", port=self.args.pg_port, user=self.args.pg_user,
                                       password=self.args.pg_password, dbname=database)
            self.pg.autocommit = True  # transactions are the client's BEGIN / COMMIT
        except psycopg2.Error as e:
            self.send_message(TABULAR_RESULT, error_token(
                4060, "Cannot open database \"{}\" requested by the login. The login failed. ({})".format(
                    database, str(e).strip()), 11) + done(DONE_ERROR))
            return False
        if 512 <= requested_packet <= 32767:
            self.packet_size = requested_packet
        prog = b_varchar("Microsoft SQL Server")
        ack = bytes([1]) + struct.pack(">I", TDS74) + prog + bytes([12, 0, 0x0F, 0xA0])
        answer = envchange(1, b_varchar(database), b_varchar("master"))
        answer += envchange(7, bytes([len(COLLATION)]) + COLLATION, b"\x00")
        answer += envchange(4, b_varchar(str(self.packet_size)), b_varchar("4096"))
        answer += struct.pack("<BH", LOGINACK, len(ack)) + ack + done()
        self.send_message(TABULAR_RESULT, answer)
        self.set_request("", "Completed")
        return True

    def with_catalog_views(self, statement):
        """SESSION_ID(), SUSER_SNAME() and the two DMVs the sink reads, over this emulator's sessions: the views are
        filled into temp tables of this PostgreSQL session just before the statement runs."""
        statement = re.sub(r"\bSESSION_ID\s*\(\s*\)", "'{}'".format(self.session_id), statement, flags=re.I)
        statement = re.sub(r"\bSUSER_SNAME\s*\(\s*\)", "'{}'".format(self.login_name.replace("'", "''")),
                           statement, flags=re.I)
        if not re.search(r"\bsys\.dm_pdw_exec_(requests|sessions)\b", statement, re.I):
            return statement
        with Session.sessions_lock:
            entries = [(sid, dict(e)) for sid, e in Session.sessions.items()]
        with self.pg.cursor() as cursor:
            cursor.execute("CREATE TEMP TABLE IF NOT EXISTS dm_pdw_exec_sessions (session_id VARCHAR, login_name VARCHAR,"
                           " status VARCHAR); CREATE TEMP TABLE IF NOT EXISTS dm_pdw_exec_requests (request_id VARCHAR,"
                           " session_id VARCHAR, status VARCHAR, command TEXT); TRUNCATE dm_pdw_exec_sessions, "
                           "dm_pdw_exec_requests")
            for sid, e in entries:
                cursor.execute("INSERT INTO dm_pdw_exec_sessions VALUES (%s, %s, %s)", (sid, e.get("login"),
                                                                                         e.get("status")))
                if e.get("command"):
                    cursor.execute("INSERT INTO dm_pdw_exec_requests VALUES (%s, %s, %s, %s)",
                                   ("QID" + sid[3:], sid, e.get("request_status"), e.get("command")))
        return re.sub(r"\bsys\.dm_pdw_exec_(requests|sessions)\b", r"pg_temp.dm_pdw_exec_\1", statement,
                      flags=re.I)

    def late_commit(self):
        """The client's connection is closed while the COMMIT still runs: another session that looks meanwhile sees
        the transaction's rows uncommitted, and the request Running in sys.dm_pdw_exec_requests."""
        self.set_request("COMMIT TRANSACTION", "Running")
        self.client.close()
        import time
        time.sleep(1.5)
        with self.pg.cursor() as cursor:
            cursor.execute("COMMIT")
        self.set_request("COMMIT TRANSACTION", "Completed")
        print("committed late, after the answer was lost, COMMIT #{}".format(Session.commits), file=sys.stderr,
              flush=True)

    def batch(self, sql):
        """Runs one batch (one statement, as the sink sends them); False when the connection is to be dropped."""
        drop = late = False
        self.set_request(sql.strip()[:4000], "Running")
        try:
            copy = COPY_INTO.match(sql)
            if copy:
                answer = done(DONE_COUNT, self.copy_into(copy))
            else:
                statement = translate(sql)
                if statement is None:
                    answer = done()
                else:
                    in_transaction = self.pg.get_transaction_status() != \
                        psycopg2.extensions.TRANSACTION_STATUS_IDLE
                    if in_transaction and DDL.match(statement):
                        raise SqlFailure(111237, "Operation cannot be performed within a transaction.")
                    if NON_CONSTANT_DEFAULT.search(sql):
                        raise SqlFailure(104385, "A DEFAULT constraint in a dedicated SQL pool takes a constant "
                                         "expression only.")
                    statement = self.with_catalog_views(statement)
                    if statement == "COMMIT":
                        with Session.commits_lock:
                            Session.commits += 1
                            late = self.args.late_commit_every > 0 and \
                                Session.commits % self.args.late_commit_every == 0
                            drop = not late and self.args.drop_commit_every > 0 and \
                                Session.commits % self.args.drop_commit_every == 0
                    if late:
                        self.late_commit()
                        return False
                    if statement == "ROLLBACK" and \
                            self.pg.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                        answer = done()  # IF @@TRANCOUNT > 0: no transaction, nothing to do
                    else:
                        answer = self.run_statement(statement)
        except SqlFailure as e:
            self.abort_transaction()
            answer = error_token(e.number, str(e)) + done(DONE_ERROR)
        except (psycopg2.Error, ValueError) as e:
            message = (getattr(e, "pgerror", None) or str(e)).strip().replace("ERROR:  ", "")
            number, prefix = ERROR_NUMBERS.get(getattr(e, "pgcode", None) or "", (50000, ""))
            self.abort_transaction()
            answer = error_token(number, "{}: {}".format(prefix, message) if prefix else message) + done(DONE_ERROR)
        self.set_request(sql.strip()[:4000], "Completed")
        if drop:
            print("dropped the answer to COMMIT #{}".format(Session.commits), file=sys.stderr, flush=True)
            return False
        self.send_message(TABULAR_RESULT, answer)
        return True

    def run_statement(self, statement):
        with self.pg.cursor() as cursor:
            cursor.execute(statement)
            if cursor.description is not None:
                rows = cursor.fetchall()
                return result_set([d.name for d in cursor.description], rows) + done(DONE_COUNT, len(rows))
            return done(DONE_COUNT if cursor.rowcount >= 0 else 0, max(cursor.rowcount, 0))

    def abort_transaction(self):
        """XACT_ABORT ON: an error rolls the whole transaction back (PostgreSQL leaves it aborted; end it)."""
        if self.pg.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_INERROR:
            with self.pg.cursor() as cursor:
                cursor.execute("ROLLBACK")

    def copy_into(self, copy):
        options = {m.group("name").upper(): m.group("value").strip("'") for m in OPTION.finditer(copy.group("options"))}
        if options.get("FILE_TYPE", "CSV").upper() != "CSV":
            raise SqlFailure(13761, "this emulator loads FILE_TYPE = 'CSV' only")
        credential = CREDENTIAL.search(copy.group("options"))
        url = copy.group("url")
        try:
            if credential is None:
                data = urllib.request.urlopen(url, timeout=30).read()
            elif credential.group("identity") == "Storage Account Key":
                data = shared_key_get(url, account_of(url), credential.group("secret").replace("''", "'"))
            elif credential.group("identity") == "Shared Access Signature":
                sas = credential.group("secret").replace("''", "'").lstrip("?")
                data = urllib.request.urlopen(url + ("&" if "?" in url else "?") + sas, timeout=30).read()
            else:
                raise SqlFailure(13767, "COPY INTO: IDENTITY '{}' is not supported here".format(
                    credential.group("identity")))
        except urllib.error.HTTPError as e:
            # What Synapse says when it cannot read the file: the storage service's status, never the secret.
            raise SqlFailure(13822, "File '{}' cannot be opened because it does not exist or it is used by another "
                             "process. (HTTP {} from the storage service)".format(url, e.code))
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise SqlFailure(13822, "File '{}' cannot be opened: {}".format(url, e))
        if options.get("COMPRESSION", "").upper() == "GZIP" or url.endswith(".gz"):
            try:
                data = gzip.decompress(data)
            except OSError as e:
                raise SqlFailure(13812, "COPY INTO: the file is not GZIP: {}".format(e))
        first_row = int(options.get("FIRSTROW", "1"))
        if first_row not in (1, 2):
            raise SqlFailure(13761, "this emulator takes FIRSTROW = 1 or 2 only")
        table = outside_literals(copy.group("table"), lambda c: c)
        columns = "({})".format(outside_literals(copy.group("columns"), lambda c: c)) if copy.group("columns") else ""
        with self.pg.cursor() as cursor:
            cursor.copy_expert("COPY {} {} FROM STDIN WITH (FORMAT csv{})".format(
                table, columns, ", HEADER" if first_row == 2 else ""), io.BytesIO(data))
            return max(cursor.rowcount, 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg-port", type=int, required=True)
    parser.add_argument("--pg-user", required=True)
    parser.add_argument("--pg-password", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--drop-commit-every", type=int, default=0)
    parser.add_argument("--late-commit-every", type=int, default=0)
    args = parser.parse_args()
    serve_connections(args.port_file, lambda client: Session(client, args).run())


if __name__ == "__main__":
    sys.exit(main())
