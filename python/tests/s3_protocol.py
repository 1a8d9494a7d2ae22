"""What the S3 test servers (s3_servers.py) share: their limits and S3's error messages, the
records of accounts, requests, faults and multipart uploads, and the small pieces of S3's wire
format (query strings, error bodies, timestamps) the checking proxy needs."""
import dataclasses
import datetime
import re
import urllib.parse
from xml.sax.saxutils import escape

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
