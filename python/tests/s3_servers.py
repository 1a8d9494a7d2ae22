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
nothing to stdout or stderr but its own failures (also in server.errors).

The proxy is in s3_proxy.py (its signature check in s3_sigv4.py), the records and S3's error
messages in s3_protocol.py."""
import contextlib
import datetime
import http.client
import os
import pathlib
import secrets
import socket
import subprocess
import threading
import urllib.parse

from http_servers import free_port, wait_for
from s3_protocol import DEFAULT_ACCESS_KEY, MAX_SKEW, MIN_PART_SIZE, OBJECT_SUFFIX, UPLOADS_DIR, Account, Fault
from s3_proxy import _Proxy, _ProxyServer

REPO = pathlib.Path(__file__).resolve().parents[2]


def s3rver_path():
    """s3rver's command: $TLIO_S3RVER, else build/npm's."""
    path = pathlib.Path(os.environ.get("TLIO_S3RVER") or REPO / "build" / "npm" / "node_modules" / ".bin" / "s3rver")
    if not path.exists():
        raise RuntimeError(f"s3rver is not installed at {path}: run `bash scripts/install-deps.sh` "
                           "(it installs the pinned s3rver into build/npm), or set TLIO_S3RVER")
    return path


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
