"""S3 for the s3:// tests, on 127.0.0.1 only: s3rver (an npm package pinned by scripts/npm,
installed into build/npm by scripts/install-deps.sh) keeps the objects, and a checking proxy in
front of it, which the clients talk to, does what s3rver does not:

- verifies AWS Signature Version 4 with botocore's signer (the secret, the credential scope's
  region and date, session tokens, the clock, the payload's SHA-256, unsigned x-amz-* headers);
- lets anonymous requests read the public buckets only;
- answers AbortMultipartUpload and ListMultipartUploads itself, refuses parts and completions
  of unknown uploads, and checks CompleteMultipartUpload as S3 does (ascending part numbers,
  ETags, parts but the last of at least 5 MiB);
- serves Range as S3 does (s3rver answers bytes=0-0 with the whole object and bytes=-N with
  bytes 0-N), with If-Match, If-Unmodified-Since and If-Range, which s3rver ignores;
- injects faults (fail_next, cut_next) and logs every request (server.requests).

    with s3_server(tmp_path) as server:
        subprocess.run([...], env=aws_env(server))
        assert server.get_object("bucket", "key") == data
        assert server.open_uploads() == []

Secrets are never printed: the log redacts signatures and tokens, and the proxy writes
nothing to stdout or stderr but its own failures (also in server.errors)."""
import contextlib
import dataclasses
import datetime
import email.utils
import hashlib
import hmac
import http
import http.client
import http.server
import os
import pathlib
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import traceback
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

import botocore.auth
import botocore.awsrequest
import botocore.compat
import botocore.credentials

from http_servers import free_port, wait_for

REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_ACCESS_KEY = "AKIATLIOTEST00000001"
MIN_PART_SIZE = 5 * 1024 * 1024
MAX_SKEW = 15 * 60
# s3rver's filesystem store: <data>/<bucket>/<key>._S3rver_object, and an open multipart
# upload's folder <data>/<bucket>/._S3rver_uploads/<id>/ holding files key, metadata, <n>, <n>.md5.
UPLOADS_DIR = "._S3rver_uploads"
OBJECT_SUFFIX = "._S3rver_object"
XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"
BLOCK = 1 << 20
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade", "expect", "content-length"}
AUTH_HEADERS = {"authorization", "x-amz-security-token", "x-amz-date", "x-amz-content-sha256"}
MESSAGES = {
    "AccessDenied": "Access Denied",
    "InternalError": "We encountered an internal error. Please try again.",
    "SlowDown": "Please reduce your request rate.",
    "ServiceUnavailable": "Service is unable to handle request.",
    "RequestTimeout": "Your socket connection to the server was not read from or written to within "
                      "the timeout period.",
    "NoSuchKey": "The specified key does not exist.",
    "NoSuchBucket": "The specified bucket does not exist",
    "NoSuchUpload": "The specified upload does not exist. The upload ID may be invalid, or the upload "
                    "may have been aborted or completed.",
    "InvalidAccessKeyId": "The AWS Access Key Id you provided does not exist in our records.",
    "SignatureDoesNotMatch": "The request signature we calculated does not match the signature you "
                             "provided. Check your key and signing method.",
    "InvalidToken": "The provided token is malformed or otherwise invalid.",
    "ExpiredToken": "The provided token has expired.",
    "XAmzContentSHA256Mismatch": "The provided 'x-amz-content-sha256' header does not match what was "
                                 "computed.",
    "RequestTimeTooSkewed": "The difference between the request time and the current time is too large.",
    "InvalidRange": "The requested range is not satisfiable",
    "PreconditionFailed": "At least one of the pre-conditions you specified did not hold",
    "InvalidPart": "One or more of the specified parts could not be found.  The part may not have been "
                   "uploaded, or the specified entity tag may not have matched the part's entity tag.",
    "InvalidPartOrder": "The list of parts was not in ascending order. Parts must be ordered by part "
                        "number.",
    "EntityTooSmall": "Your proposed upload is smaller than the minimum allowed object size.",
    "MalformedXML": "The XML you provided was not well-formed or did not validate against our "
                    "published schema.",
}


def s3rver_path():
    """s3rver's command: $TLIO_S3RVER, else build/npm's."""
    path = pathlib.Path(os.environ.get("TLIO_S3RVER") or REPO / "build" / "npm" / "node_modules" / ".bin" / "s3rver")
    if not path.exists():
        raise RuntimeError(f"s3rver is not installed at {path}: run `bash scripts/install-deps.sh` "
                           "(it installs the pinned s3rver into build/npm), or set TLIO_S3RVER")
    return path


@dataclasses.dataclass
class Account:
    secret: str = dataclasses.field(repr=False)
    token: str | None = dataclasses.field(default=None, repr=False)
    expired: bool = False


@dataclasses.dataclass
class Request:
    """One request the proxy answered. path is decoded (/bucket/key), query maps decoded names
    to values (the last one if repeated); headers has lower-cased names, the Signature and the
    security token redacted."""
    method: str
    path: str
    query: dict
    headers: dict
    body_length: int
    status: int = 0
    response_length: int = 0
    access_key: str | None = None  # None: anonymous
    code: str | None = None  # the error code when the proxy made the answer itself
    fault: str | None = None  # "fail" or "cut" when an injected fault was used
    raw_path: str = ""

    @property
    def bucket(self):
        return self.path.lstrip("/").partition("/")[0]

    @property
    def key(self):
        return self.path.lstrip("/").partition("/")[2]


@dataclasses.dataclass
class Fault:
    kind: str  # "fail" or "cut"
    count: int
    method: str | None = None
    query_has: str | None = None
    path_has: str | None = None
    status: int = 0
    code: str = ""
    message: str | None = None
    after_bytes: int = 0

    def matches(self, method, path, query):
        return ((self.method is None or self.method.upper() == method)
                and (self.query_has is None or self.query_has in query)
                and (self.path_has is None or self.path_has in path))


@dataclasses.dataclass
class Upload:
    bucket: str
    key: str
    upload_id: str
    initiated: datetime.datetime
    state: str = "open"  # open, completed, aborted


class _Verifier(botocore.auth.S3SigV4Auth):
    """botocore's S3 signer made to sign exactly the headers the request says it signed (botocore
    would leave out some, e.g. user-agent and expect, and add host)."""

    def __init__(self, credentials, region, signed_headers):
        super().__init__(credentials, "s3", region)
        self._signed_headers = signed_headers

    def headers_to_sign(self, request):
        return self._signed_headers


class _Refusal(Exception):
    def __init__(self, status, code, message=None, extra=None, headers=None):
        super().__init__(code)
        self.status, self.code = status, code
        self.message = message or MESSAGES.get(code, code)
        self.extra, self.headers = extra or {}, headers or {}


def _split_query(raw_query):
    """[(name, value)] decoded, in order; '+' stays a plus, as S3 reads it."""
    pairs = []
    for part in raw_query.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((urllib.parse.unquote(name, errors="replace"), urllib.parse.unquote(value, errors="replace")))
    return pairs


def _redact(headers):
    out = {}
    for name, value in headers.items():
        name = name.lower()
        if name == "authorization":
            value = re.sub(r"Signature=[^,\s]*", "Signature=<redacted>", value)
        elif name == "x-amz-security-token":
            value = "<redacted>"
        out[name] = value
    return out


def _error_xml(code, message, resource, request_id, extra):
    parts = "".join(f"<{k}>{escape(str(v))}</{k}>" for k, v in extra.items())
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{escape(code)}</Code>'
            f"<Message>{escape(message)}</Message>{parts}<Resource>{escape(resource)}</Resource>"
            f"<RequestId>{request_id}</RequestId></Error>").encode()


def _iso(when):
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class _UploadGate:
    """The requests of one multipart upload: its parts go up together; its abort and its
    completion wait for the parts in flight (s3rver may still be writing a part's file into the
    upload's folder after the client that sent it has gone) and keep new ones out meanwhile."""

    def __init__(self):
        self._cond = threading.Condition()
        self._parts = 0

    @contextlib.contextmanager
    def part(self):
        with self._cond:
            self._parts += 1
        try:
            yield
        finally:
            with self._cond:
                self._parts -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def whole(self):
        with self._cond:
            self._cond.wait_for(lambda: self._parts == 0)
            yield


class S3Server:
    """What s3_server yields; see the module's doc."""

    def __init__(self, tmp, accounts, region, public_buckets, buckets, min_part_size, max_skew):
        self.tmp = pathlib.Path(tmp)
        self.data_dir = self.tmp / "s3rver-data"
        self.region = region
        if accounts is None:
            accounts = {DEFAULT_ACCESS_KEY: secrets.token_urlsafe(30)}
        self.accounts = {k: Account(v) if isinstance(v, str) else Account(**v) for k, v in accounts.items()}
        self.access_key = next(iter(self.accounts), None)
        self.public_buckets = set(public_buckets)
        self.buckets = tuple(buckets)
        self.min_part_size = min_part_size
        self.max_skew = max_skew
        self.requests = []  # Request records, in the order answered
        self.errors = []  # the proxy's own failures (tracebacks); a test may assert it is empty
        self.faults_hit = 0
        self.uploads = {}  # upload id -> Upload, as the proxy saw them
        self._gates = {}  # upload id -> _UploadGate
        self._faults = []
        self._lock = threading.Lock()
        self._connections = set()
        self.s3rver_port = None
        self.endpoint = None

    # --- the default account -------------------------------------------------------------
    @property
    def secret_key(self):
        return self.accounts[self.access_key].secret if self.access_key else None

    @property
    def session_token(self):
        return self.accounts[self.access_key].token if self.access_key else None

    # --- faults ------------------------------------------------------------------------------
    def fail_next(self, status, code, count=1, method=None, query_has=None, message=None, path_has=None):
        """Answer the next `count` requests that match (method, a query parameter's name, a part
        of the decoded path) with this S3 error instead of forwarding them."""
        with self._lock:
            self._faults.append(Fault("fail", count, method, query_has, path_has, status, code, message))

    def cut_next(self, count=1, method=None, after_bytes=0, query_has=None, path_has=None):
        """Forward the next `count` matching requests, then close the connection after the status
        line, the headers and at most `after_bytes` of the body (a negative after_bytes: before
        sending anything at all)."""
        with self._lock:
            self._faults.append(Fault("cut", count, method, query_has, path_has, after_bytes=after_bytes))

    def clear_faults(self):
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method, path, query):
        with self._lock:
            for fault in self._faults:
                if fault.count > 0 and fault.matches(method, path, query):
                    fault.count -= 1
                    self.faults_hit += 1
                    if fault.count == 0:
                        self._faults.remove(fault)
                    return fault
        return None

    # --- multipart uploads -------------------------------------------------------------------
    def upload_gate(self, upload_id):
        with self._lock:
            return self._gates.setdefault(upload_id, _UploadGate())

    def upload_dir(self, bucket, upload_id):
        return self.data_dir / bucket / UPLOADS_DIR / upload_id

    def open_uploads(self):
        """[(key, upload id)] of the uploads not completed nor aborted: those the proxy saw
        created and not finished, and those whose folder s3rver still has (a leak shows either
        way)."""
        return sorted((key, upload_id) for _, key, upload_id, _ in self._open_upload_entries())

    def _open_upload_entries(self):
        """[(bucket, key, upload id, initiated)] of the open uploads."""
        with self._lock:
            found = {(u.bucket, u.upload_id): (u.key, u.initiated) for u in self.uploads.values() if u.state == "open"}
        for folder in self.data_dir.glob(f"*/{UPLOADS_DIR}/*"):
            where = (folder.parent.parent.name, folder.name)
            try:
                key = (folder / "key").read_text()
            except OSError:  # being made
                key = found.get(where, ("", None))[0]
            initiated = found.get(where, (None, None))[1]
            if initiated is None:
                with contextlib.suppress(OSError):
                    initiated = datetime.datetime.fromtimestamp(folder.stat().st_mtime, datetime.timezone.utc)
            found[where] = (key, initiated or datetime.datetime.now(datetime.timezone.utc))
        return [(bucket, key, upload_id, initiated) for (bucket, upload_id), (key, initiated) in found.items()]

    # --- straight to s3rver, anonymously -----------------------------------------------------
    def _direct(self, method, bucket, key="", body=None, query=""):
        path = "/" + urllib.parse.quote(bucket, safe="") + ("/" + urllib.parse.quote(key, safe="/~") if key else "")
        conn = http.client.HTTPConnection("127.0.0.1", self.s3rver_port, timeout=60)
        try:
            conn.request(method, path + (f"?{query}" if query else ""), body=body)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def put_object(self, bucket, key, data):
        status, body = self._direct("PUT", bucket, key, body=bytes(data))
        if status != 200:
            raise RuntimeError(f"s3rver answered {status} to PUT /{bucket}/{key}: {body[:300]!r}")

    def get_object(self, bucket, key):
        """The object's bytes, None if there is no such object."""
        status, body = self._direct("GET", bucket, key)
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"s3rver answered {status} to GET /{bucket}/{key}: {body[:300]!r}")
        return body

    def delete_object(self, bucket, key):
        self._direct("DELETE", bucket, key)

    def keys(self, bucket, prefix=""):
        """The bucket's keys starting with prefix, sorted (from s3rver's folder)."""
        root = self.data_dir / bucket
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != UPLOADS_DIR]
            for name in files:
                if name.endswith(OBJECT_SUFFIX):
                    key = os.path.relpath(os.path.join(folder, name[:-len(OBJECT_SUFFIX)]), root)
                    key = key.replace(os.sep, "/")
                    if key.startswith(prefix):
                        found.append(key)
        return sorted(found)

    def bucket_exists(self, bucket):
        return bool(bucket) and bucket not in (".", "..") and "/" not in bucket and (self.data_dir / bucket).is_dir()


class _ProxyServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class _Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # an idle keep-alive connection's thread ends then

    def log_message(self, *args):  # nothing on stderr (never a header)
        pass

    def setup(self):
        super().setup()
        with self.server.s3._lock:
            self.server.s3._connections.add(self.connection)

    def finish(self):
        with self.server.s3._lock:
            self.server.s3._connections.discard(self.connection)
        super().finish()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = lambda self: self._handle()

    # --- the request ---------------------------------------------------------------------
    def _handle(self):
        s3 = self.server.s3
        self._rec = None
        self._logged = False
        self._headers_sent = False
        spool = None
        try:
            raw_path, _, raw_query = self.path.partition("?")
            if raw_path.startswith(("http://", "https://")):
                raw_path = "/" + raw_path.split("/", 3)[3] if raw_path.count("/") >= 3 else "/"
            self._raw_path, self._raw_query = raw_path, raw_query
            self._pairs = _split_query(raw_query)
            query = dict(self._pairs)
            path = urllib.parse.unquote(raw_path, errors="replace")
            self._bucket, _, self._key = path.lstrip("/").partition("/")
            self._resource = path
            try:
                spool, length, digest = self._read_body()
            except (ConnectionError, ValueError, OSError):
                self.close_connection = True
                return
            self._rec = Request(self.command, path, query, _redact(self.headers), length, raw_path=raw_path)
            fault = None
            try:
                self._rec.access_key = self._authenticate(digest)
                fault = s3._take_fault(self.command, path, query)
                if fault and fault.kind == "fail":
                    self._rec.fault = "fail"
                    raise _Refusal(fault.status, fault.code, fault.message)
                if fault:
                    self._rec.fault = "cut"
                self._serve(spool, length, fault)
            except _Refusal as refusal:
                self._send_error(refusal, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # a failure of the proxy itself: told, and answered 500 if still possible
            text = traceback.format_exc()
            with s3._lock:
                s3.errors.append(text)
            print(f"s3_servers proxy failure on {self.command} {self._resource_safe()}:\n{text}", flush=True)
            if not self._headers_sent and self._rec is not None:
                try:
                    self._send_error(_Refusal(500, "InternalError", "the test proxy failed (see server.errors)"))
                except OSError:
                    pass
            self.close_connection = True
        finally:
            if spool is not None:
                spool.close()
            self._log()

    def _resource_safe(self):
        return getattr(self, "_resource", "?")

    def _read_body(self):
        """The request body in a spooled file, its length and its SHA-256 (hex)."""
        s3 = self.server.s3
        spool = tempfile.SpooledTemporaryFile(max_size=16 * BLOCK, dir=s3.tmp)
        sha = hashlib.sha256()
        total = 0
        try:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                while True:
                    line = self.rfile.readline(65537)
                    if not line:
                        raise ConnectionError("the client went away in a chunked body")
                    size = int(line.split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        break
                    total += self._copy(size, spool, sha)
                    self.rfile.readline(65537)  # the chunk's CRLF
            else:
                length = int(self.headers.get("Content-Length") or 0)
                if length < 0:
                    raise ValueError("negative Content-Length")
                total = self._copy(length, spool, sha)
        except BaseException:
            spool.close()
            raise
        return spool, total, sha.hexdigest()

    def _copy(self, size, out, sha):
        remaining = size
        while remaining:
            chunk = self.rfile.read(min(BLOCK, remaining))
            if not chunk:
                raise ConnectionError("the client went away in the body")
            out.write(chunk)
            sha.update(chunk)
            remaining -= len(chunk)
        return size

    # --- Signature Version 4 -------------------------------------------------------------
    def _authenticate(self, digest):
        """The access key of a valid signed request, None for an allowed anonymous one; raises
        _Refusal otherwise."""
        s3 = self.server.s3
        auth = self.headers.get("Authorization")
        if auth is None:
            if any(name.lower() in ("x-amz-algorithm", "x-amz-signature") for name, _ in self._pairs):
                raise _Refusal(501, "NotImplemented", "the test proxy does not check presigned URLs")
            if self._bucket in s3.public_buckets and self.command in ("GET", "HEAD"):
                return None
            raise _Refusal(403, "AccessDenied")
        auth = auth.strip()
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            raise _Refusal(400, "InvalidRequest", "The authorization mechanism you have provided is not "
                           "supported. Please use AWS4-HMAC-SHA256.")
        fields = {}
        for item in auth[len("AWS4-HMAC-SHA256 "):].split(","):
            name, _, value = item.strip().partition("=")
            fields[name] = value
        if not {"Credential", "SignedHeaders", "Signature"} <= fields.keys():
            raise _Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed; "
                           "it needs Credential, SignedHeaders and Signature.")
        scope = fields["Credential"].split("/")
        if len(scope) != 5 or scope[3] != "s3" or scope[4] != "aws4_request" or not re.fullmatch(r"\d{8}", scope[1]):
            raise _Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed; the "
                           "Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
        access_key, scope_date, region = scope[0], scope[1], scope[2]
        account = s3.accounts.get(access_key)
        if account is None:
            raise _Refusal(403, "InvalidAccessKeyId", extra={"AWSAccessKeyId": access_key})
        if account.expired:
            raise _Refusal(400, "ExpiredToken")
        signed_names = fields["SignedHeaders"].split(";")
        sent_token = self.headers.get("x-amz-security-token")
        if account.token is not None:
            if (sent_token is None or "x-amz-security-token" not in signed_names
                    or not hmac.compare_digest(sent_token.encode(), account.token.encode())):
                raise _Refusal(403, "InvalidToken")
        elif sent_token is not None:
            raise _Refusal(403, "InvalidToken")
        if region != s3.region:
            raise _Refusal(400, "AuthorizationHeaderMalformed", f"The authorization header is malformed; the "
                           f"region '{region}' is wrong; expecting '{s3.region}'", extra={"Region": s3.region})
        content_sha = self.headers.get("x-amz-content-sha256")
        if content_sha is None:
            raise _Refusal(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
        amz_date = self.headers.get("x-amz-date")
        try:
            when = datetime.datetime.strptime(amz_date or "", "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            raise _Refusal(403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
        present = {name.lower() for name in self.headers.keys()}
        unsigned = {name for name in present if name.startswith("x-amz-")} | {"host", "x-amz-date", "x-amz-content-sha256"}
        unsigned = sorted(unsigned - set(signed_names))
        if unsigned:  # S3 wants host and every x-amz-* header signed
            raise _Refusal(403, "AccessDenied", "There were headers present in the request which were not signed",
                           extra={"HeadersNotSigned": ", ".join(unsigned)})
        if amz_date[:8] != scope_date:
            raise _Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed; Invalid "
                           "credential date. Date is not the same as X-Amz-Date.")
        now = datetime.datetime.now(datetime.timezone.utc)
        if abs((now - when).total_seconds()) > s3.max_skew:
            raise _Refusal(403, "RequestTimeTooSkewed", extra={"RequestTime": amz_date, "ServerTime": _iso(now),
                                                                "MaxAllowedSkewMilliseconds": s3.max_skew * 1000})
        expected, string_to_sign, canonical = self._expected_signature(access_key, account, region, amz_date,
                                                                       signed_names)
        if not hmac.compare_digest(expected.encode(), fields["Signature"].encode()):
            if account.token is not None:
                canonical = canonical.replace(account.token, "<redacted>")
            raise _Refusal(403, "SignatureDoesNotMatch", extra={
                "AWSAccessKeyId": access_key, "StringToSign": string_to_sign, "CanonicalRequest": canonical})
        if content_sha.startswith("STREAMING-"):
            raise _Refusal(501, "NotImplemented", f"the test proxy does not take {content_sha} bodies")
        if content_sha != "UNSIGNED-PAYLOAD":
            if not re.fullmatch(r"[0-9a-f]{64}", content_sha):
                raise _Refusal(400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                               "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid sha256 value.")
            if content_sha != digest:
                raise _Refusal(400, "XAmzContentSHA256Mismatch", extra={
                    "ClientComputedContentSHA256": content_sha, "S3ComputedContentSHA256": digest})
        return access_key

    def _expected_signature(self, access_key, account, region, amz_date, signed_names):
        """(signature, string to sign, canonical request) by botocore, of this request as received:
        the canonical URI is the path decoded and encoded once (S3 does not encode twice nor
        normalise . and ..), the query's names and values are encoded and sorted."""
        signed = botocore.compat.HTTPHeaders()
        for name in signed_names:
            values = self.headers.get_all(name)
            if values is None:
                raise _Refusal(403, "SignatureDoesNotMatch", f"the signed header '{name}' is not in the request")
            for value in values:
                signed[name] = value
        canonical_path = urllib.parse.quote(urllib.parse.unquote_to_bytes(self._raw_path), safe="/~")
        request = botocore.awsrequest.AWSRequest(
            method=self.command, url=f"http://{self.headers.get('host', '')}{canonical_path}",
            headers={"X-Amz-Content-SHA256": self.headers["x-amz-content-sha256"]}, params=list(self._pairs))
        request.context["timestamp"] = amz_date
        signer = _Verifier(botocore.credentials.Credentials(access_key, account.secret, account.token), region, signed)
        canonical = signer.canonical_request(request)
        string_to_sign = signer.string_to_sign(request, canonical)
        return signer.signature(string_to_sign, request), string_to_sign, canonical

    # --- serving -------------------------------------------------------------------------
    def _serve(self, spool, length, fault):
        query, key = self._rec.query, self._key
        if not (key and "uploadId" in query and self.command in ("DELETE", "PUT", "POST")):
            return self._serve_request(spool, length, fault)
        gate = self.server.s3.upload_gate(query["uploadId"])
        with gate.part() if self.command == "PUT" else gate.whole():
            return self._serve_request(spool, length, fault)

    def _serve_request(self, spool, length, fault):
        s3 = self.server.s3
        method, query, bucket, key = self.command, self._rec.query, self._bucket, self._key
        if bucket and not key and method == "GET" and "uploads" in query:
            return self._list_uploads(fault)
        if key and "uploadId" in query and method in ("DELETE", "PUT", "POST"):
            upload_id = query["uploadId"]
            if not s3.bucket_exists(bucket):
                raise _Refusal(404, "NoSuchBucket", extra={"BucketName": bucket})
            folder = s3.upload_dir(bucket, upload_id)
            try:
                stored_key = (folder / "key").read_text() if re.fullmatch(r"[0-9a-f]{1,64}", upload_id) else None
            except OSError:
                stored_key = None
            if stored_key != key:
                raise _Refusal(404, "NoSuchUpload", extra={"UploadId": upload_id})
            if method == "DELETE":
                shutil.rmtree(folder)
                self._set_upload(upload_id, bucket, key, "aborted")
                return self._send(204, [], b"", fault)
            if method == "PUT":
                number = query.get("partNumber", "")
                if not re.fullmatch(r"[0-9]{1,5}", number) or not 1 <= int(number) <= 10000:
                    raise _Refusal(400, "InvalidArgument", "Part number must be an integer between 1 and 10000, "
                                   "inclusive", extra={"ArgumentName": "partNumber", "ArgumentValue": number})
            else:
                self._check_completion(spool, folder, upload_id)
        overrides, trim = self._conditions()
        conn, resp = self._forward(spool, length, overrides)
        try:
            body = None
            if method == "POST" and key and ("uploads" in query or "uploadId" in query):
                body = resp.read()
                if resp.status == 200 and "uploads" in query:
                    found = re.search(rb"<UploadId>([^<]+)</UploadId>", body)
                    if found:
                        self._set_upload(found.group(1).decode(), bucket, key, "open")
                elif resp.status == 200 and b"CompleteMultipartUploadResult" in body:
                    self._set_upload(query["uploadId"], bucket, key, "completed")
            self._relay(resp, body, trim, fault)
        finally:
            conn.close()

    def _set_upload(self, upload_id, bucket, key, state):
        s3 = self.server.s3
        with s3._lock:
            upload = s3.uploads.get(upload_id)
            if upload is None:
                upload = s3.uploads[upload_id] = Upload(bucket, key, upload_id,
                                                        datetime.datetime.now(datetime.timezone.utc))
            upload.state = state

    def _check_completion(self, spool, folder, upload_id):
        """CompleteMultipartUpload as S3 checks it (s3rver takes any list of parts)."""
        s3 = self.server.s3
        spool.seek(0)
        try:
            root = ET.fromstring(spool.read(16 * BLOCK))
        except ET.ParseError:
            raise _Refusal(400, "MalformedXML")
        parts = []
        for element in root.iter():
            if element.tag.rpartition("}")[2] == "Part":
                fields = {child.tag.rpartition("}")[2]: (child.text or "").strip() for child in element}
                if not re.fullmatch(r"[0-9]{1,5}", fields.get("PartNumber", "")) or "ETag" not in fields:
                    raise _Refusal(400, "MalformedXML")
                parts.append((int(fields["PartNumber"]), fields["ETag"].replace('"', "")))
        if root.tag.rpartition("}")[2] != "CompleteMultipartUpload" or not parts:
            raise _Refusal(400, "MalformedXML")
        numbers = [n for n, _ in parts]
        if any(a >= b for a, b in zip(numbers, numbers[1:])):
            raise _Refusal(400, "InvalidPartOrder", extra={"UploadId": upload_id})
        for i, (number, etag) in enumerate(parts):
            try:
                stored = (folder / f"{number}.md5").read_text().strip()
                size = (folder / str(number)).stat().st_size
            except OSError:
                raise _Refusal(400, "InvalidPart", extra={"UploadId": upload_id, "PartNumber": number, "ETag": etag})
            if stored != etag:
                raise _Refusal(400, "InvalidPart", extra={"UploadId": upload_id, "PartNumber": number, "ETag": etag})
            if i + 1 < len(parts) and size < s3.min_part_size:
                raise _Refusal(400, "EntityTooSmall", extra={
                    "ProposedSize": size, "MinSizeAllowed": s3.min_part_size, "PartNumber": number, "ETag": etag})

    def _list_uploads(self, fault):
        s3 = self.server.s3
        bucket = self._bucket
        if not s3.bucket_exists(bucket):
            raise _Refusal(404, "NoSuchBucket", extra={"BucketName": bucket})
        prefix = self._rec.query.get("prefix", "")
        entries = sorted((key, upload_id, when) for b, key, upload_id, when in s3._open_upload_entries()
                         if b == bucket and key.startswith(prefix))
        items = "".join(f"<Upload><Key>{escape(k)}</Key><UploadId>{u}</UploadId><Initiated>{_iso(w)}</Initiated>"
                        f"<StorageClass>STANDARD</StorageClass></Upload>" for k, u, w in entries)
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult xmlns="{XMLNS}">'
                f"<Bucket>{escape(bucket)}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>"
                f"<NextKeyMarker></NextKeyMarker><NextUploadIdMarker></NextUploadIdMarker>"
                f"<Prefix>{escape(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>"
                f"{items}</ListMultipartUploadsResult>").encode()
        self._send(200, [("Content-Type", "application/xml")], body, fault)

    def _conditions(self):
        """For an object's GET or HEAD with Range or preconditions, what s3rver gets wrong or
        ignores: ({header: value or None to drop}, (start, end, size) to trim the answer to, or
        None). Raises the 412 or 416 refusals."""
        h = self.headers
        if (self.command not in ("GET", "HEAD") or not self._key
                or not any(h.get(n) for n in ("Range", "If-Match", "If-Unmodified-Since", "If-Range"))
                or any(n in self._rec.query for n in ("uploadId", "acl", "tagging", "uploads"))):
            return {}, None
        status, meta = self._head()
        if status != 200:
            return {}, None
        overrides = {"If-Match": None, "If-Unmodified-Since": None, "If-Range": None, "Range": None}
        etag, size = meta.get("etag", ""), int(meta.get("content-length", "0"))
        modified = email.utils.parsedate_to_datetime(meta["last-modified"]) if meta.get("last-modified") else None
        if h.get("If-Match"):
            tags = [t.strip() for t in h["If-Match"].split(",")]
            if "*" not in tags and etag not in tags:
                raise _Refusal(412, "PreconditionFailed", extra={"Condition": "If-Match"})
        elif h.get("If-Unmodified-Since") and modified is not None:
            try:
                since = email.utils.parsedate_to_datetime(h["If-Unmodified-Since"])
            except (TypeError, ValueError):
                since = None
            if since is not None and modified > since:
                raise _Refusal(412, "PreconditionFailed", extra={"Condition": "If-Unmodified-Since"})
        spec = (h.get("Range") or "").strip()
        if_range = h.get("If-Range")
        if if_range and if_range.strip() != etag and if_range.strip() != meta.get("last-modified"):
            spec = ""  # another version: the whole object
        found = re.fullmatch(r"bytes=(\d*)-(\d*)", spec)
        if not found or found.groups() == ("", ""):
            return overrides, None  # no range, several or a malformed one: the whole object
        first, last = found.groups()
        if first == "":
            if int(last) == 0 or size == 0:
                raise self._unsatisfiable(spec, size)
            start, end = max(0, size - int(last)), size - 1
        else:
            start = int(first)
            if last != "" and int(last) < start:
                return overrides, None  # invalid: ignored
            end = size - 1 if last == "" else int(last)
            if start >= size:
                raise self._unsatisfiable(spec, size)
            end = min(end, size - 1)
        overrides["Range"] = f"bytes={start}-{max(end, 1)}"  # s3rver reads an end of 0 as none
        return overrides, (start, end, size)

    def _unsatisfiable(self, spec, size):
        return _Refusal(416, "InvalidRange", extra={"RangeRequested": spec, "ActualObjectSize": size},
                        headers={"Content-Range": f"bytes */{size}"})

    def _head(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.s3.s3rver_port, timeout=60)
        try:
            conn.request("HEAD", self._raw_path)
            resp = conn.getresponse()
            resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()

    def _forward(self, spool, length, overrides):
        """Sends the request to s3rver without its authentication: (connection, response)."""
        s3 = self.server.s3
        conn = http.client.HTTPConnection("127.0.0.1", s3.s3rver_port, timeout=120)
        target = self._raw_path + (f"?{self._raw_query}" if self._raw_query else "")
        conn.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
        lowered = {k.lower(): v for k, v in overrides.items()}
        if "host" not in self.headers:
            conn.putheader("Host", f"127.0.0.1:{s3.s3rver_port}")
        for name, value in self.headers.items():
            low = name.lower()
            if low not in HOP_BY_HOP and low not in AUTH_HEADERS and low not in lowered:
                conn.putheader(name, value)
        for name, value in overrides.items():
            if value is not None:
                conn.putheader(name, value)
        if length or self.command in ("PUT", "POST"):
            conn.putheader("Content-Length", str(length))
        conn.endheaders()
        spool.seek(0)
        while chunk := spool.read(BLOCK):
            conn.send(chunk)
        try:
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    # --- answering -----------------------------------------------------------------------
    def _relay(self, resp, body, trim, fault):
        headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
        head_length = resp.getheader("Content-Length")
        want = None
        if trim is not None and resp.status == 206:
            start, end, size = trim
            want = end - start + 1
            headers = [(k, v) for k, v in headers if k.lower() != "content-range"]
            headers.append(("Content-Range", f"bytes {start}-{end}/{size}"))
            head_length = str(want)
        if self.command == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200:
            if head_length is not None and resp.status not in (204, 304):
                headers.append(("Content-Length", head_length))
            return self._send(resp.status, headers, b"", fault, reason=resp.reason, no_length=True)
        if body is None and resp.length is None:  # chunked or until close: whole, then relayed
            body = resp.read()
        if body is not None:
            return self._send(resp.status, headers, body if want is None else body[:want], fault, reason=resp.reason)
        return self._send(resp.status, headers, resp, fault, reason=resp.reason,
                          length=resp.length if want is None else want)

    def _send_error(self, refusal, fault=None):
        request_id = secrets.token_hex(8).upper()
        body = _error_xml(refusal.code, refusal.message, self._resource, request_id, refusal.extra)
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id),
                   ("Date", self.date_time_string()), *refusal.headers.items()]
        self._rec.code = refusal.code
        if self.command == "HEAD":  # as s3rver answers a HEAD: the length of the XML, no body
            headers.append(("Content-Length", str(len(body))))
            return self._send(refusal.status, headers, b"", fault, no_length=True)
        return self._send(refusal.status, headers, body, fault)

    def _send(self, status, headers, body, fault, reason=None, length=None, no_length=False):
        """Status line, headers and body (bytes, or a response to read `length` bytes of); the
        request is logged just before the last bytes go, so a client that has its answer finds
        it in server.requests. A cut fault closes the connection after after_bytes of body."""
        self._rec.status = status
        cut = fault.after_bytes if fault is not None and fault.kind == "cut" else None
        if cut is not None and cut < 0:
            self._rec.response_length = 0
            self._log()
            self._cut()
            return
        if isinstance(body, (bytes, bytearray)):
            length = len(body)
        if status in (204, 304) or 100 <= status < 200:
            no_length = True  # such an answer has no body and tells no length
        send = length if cut is None else min(cut, length)
        self.send_response_only(status, reason)
        for name, value in headers:
            self.send_header(name, value)
        if not no_length:
            self.send_header("Content-Length", str(length))
        self._headers_sent = True
        self._rec.response_length = send
        if send == 0:
            self._log()
        self.end_headers()
        remaining = send
        while remaining:
            chunk = body[send - remaining:send - remaining + BLOCK] if isinstance(body, (bytes, bytearray)) \
                else body.read(min(BLOCK, remaining))
            if not chunk:  # s3rver sent less than it said
                self._rec.response_length = send - remaining
                self._log()
                self._cut()
                return
            remaining -= len(chunk)
            if remaining == 0:
                self._log()
            self.wfile.write(chunk)
        if cut is not None:
            self._cut()
        elif send < length:  # not all of upstream's body was relayed: this connection is unusable
            self.close_connection = True

    def _cut(self):
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def _log(self):
        if self._rec is not None and not self._logged:
            self._logged = True
            s3 = self.server.s3
            with s3._lock:
                s3.requests.append(self._rec)


@contextlib.contextmanager
def plain_s3rver(data_dir, bucket="bucket"):
    """s3rver alone on 127.0.0.1 (no checking proxy in front: for benchmarks), with `bucket`,
    its objects kept in `data_dir`, for the duration of the block; yields its endpoint URL."""
    data_dir = pathlib.Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([str(s3rver_path()), "-d", str(data_dir), "-a", "127.0.0.1", "-p", str(port), "--silent",
                             "--allow-mismatched-signatures", "--no-vhost-buckets", "--configure-bucket", bucket],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port, 20)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def s3_server(tmp_path, *, accounts=None, region="us-east-1", public_buckets=(), buckets=("bucket",),
              min_part_size=MIN_PART_SIZE, max_skew=MAX_SKEW):
    """s3rver behind the checking proxy, both on 127.0.0.1, for the duration of the block.

    accounts: {access key: secret, or dict(secret=..., token=None, expired=False)}; None: one
    account, DEFAULT_ACCESS_KEY with a random secret. The first account is the default one
    (server.access_key, .secret_key, .session_token; aws_env uses it). public_buckets: read
    anonymously (GET, HEAD). buckets: created at the start (public ones too: list them in both)."""
    command = s3rver_path()
    tmp = pathlib.Path(tmp_path)
    tmp.mkdir(parents=True, exist_ok=True)
    server = S3Server(tmp, accounts, region, public_buckets, buckets, min_part_size, max_skew)
    server.data_dir.mkdir(exist_ok=True)
    server.s3rver_port = free_port()
    args = [str(command), "-d", str(server.data_dir), "-a", "127.0.0.1", "-p", str(server.s3rver_port),
            "--silent", "--allow-mismatched-signatures", "--no-vhost-buckets"]
    for bucket in dict.fromkeys([*buckets]):
        args += ["--configure-bucket", bucket]
    log = open(tmp / "s3rver.log", "wb")
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    proxy = None
    try:
        try:
            wait_for(server.s3rver_port, 20)
        except RuntimeError:
            raise RuntimeError(f"s3rver did not start: {(tmp / 's3rver.log').read_text(errors='replace')[-2000:]}")
        proxy = _ProxyServer(("127.0.0.1", 0), _Proxy)
        proxy.s3 = server
        server.endpoint = f"http://127.0.0.1:{proxy.server_address[1]}"
        threading.Thread(target=proxy.serve_forever, daemon=True, name="s3-proxy").start()
        yield server
    finally:
        if proxy is not None:
            proxy.shutdown()
            proxy.server_close()
            with server._lock:
                open_connections = list(server._connections)
            for conn in open_connections:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def aws_env(server, **overrides):
    """A whole environment for a client process of `server`: this one's without any AWS_*
    variable, plus the default account's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and
    AWS_SESSION_TOKEN if it has one), AWS_REGION, AWS_ENDPOINT_URL, and isolation from the
    user's own files and from instance metadata: AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE
    at paths that do not exist, HOME an empty folder, AWS_EC2_METADATA_DISABLED=true, no proxy
    for 127.0.0.1. overrides replace variables; a value None removes one."""
    home = server.tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_REGION=server.region, AWS_ENDPOINT_URL=server.endpoint,
               AWS_CONFIG_FILE=str(home / "no-aws-config"), AWS_SHARED_CREDENTIALS_FILE=str(home / "no-aws-credentials"),
               AWS_EC2_METADATA_DISABLED="true", HOME=str(home))
    if server.access_key is not None:
        env.update(AWS_ACCESS_KEY_ID=server.access_key, AWS_SECRET_ACCESS_KEY=server.secret_key)
        if server.session_token:
            env["AWS_SESSION_TOKEN"] = server.session_token
    for name in ("no_proxy", "NO_PROXY"):
        env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


def use_aws_env(monkeypatch, server, **overrides):
    """aws_env for this process (for the tlio module in-process): sets it with pytest's
    monkeypatch, which restores the environment after the test."""
    env = aws_env(server, **overrides)
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    return env
