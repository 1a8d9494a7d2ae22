"""The checking proxy of the S3 test servers (s3_servers.py): an HTTP server on 127.0.0.1 in front of
s3rver that checks each request's signature (s3_sigv4.py), answers the multipart and Range
requests s3rver gets wrong, injects the server's faults and logs every request."""
import datetime
import email.utils
import hashlib
import http.client
import http.server
import re
import secrets
import shutil
import socket
import tempfile
import traceback
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

from s3_protocol import (AUTH_HEADERS, BLOCK, HOP_BY_HOP, XMLNS, Request, Upload, _error_xml, _iso, _redact,
                         _Refusal, _split_query)
from s3_sigv4 import SigV4Check


class _ProxyServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class _Proxy(SigV4Check, http.server.BaseHTTPRequestHandler):
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
