"""The S3 test infrastructure itself (s3_servers: s3rver behind the checking proxy), with boto3 as
the client: it must take what a right client sends and refuse, as S3 does, what a wrong one
sends. These tests need neither tlio nor its build, only build/npm's s3rver."""
import datetime
import hashlib
import http.client
import os
import secrets
import urllib.parse

import boto3
import botocore
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import s3_servers
from s3_servers import aws_env, s3_server, use_aws_env

MAIN = "AKIATLIOMAIN00000001"
TOKEN = "AKIATLIOTOKEN0000001"
EXPIRED = "AKIATLIOEXPIRED00001"
ACCOUNTS = {
    MAIN: "main-" + secrets.token_urlsafe(24),
    TOKEN: dict(secret="token-" + secrets.token_urlsafe(24), token="session-" + secrets.token_urlsafe(40)),
    EXPIRED: dict(secret="expired-" + secrets.token_urlsafe(24), token="old-" + secrets.token_urlsafe(40),
                  expired=True),
}
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s3")
    with s3_server(tmp, accounts=ACCOUNTS, buckets=("bucket", "public"), public_buckets=("public",)) as server:
        with pytest.MonkeyPatch.context() as mp:  # boto3 reads no file nor variable of the user's
            use_aws_env(mp, server)
            yield server


@pytest.fixture
def server(shared):
    shared.clear_faults()
    shared.requests.clear()
    shared.faults_hit = 0
    yield shared
    assert shared.errors == []


_session = boto3.session.Session()


def client(server, access_key=MAIN, secret=None, token=None, unsigned=False, region="us-east-1", attempts=3):
    config = Config(s3={"addressing_style": "path"}, signature_version=botocore.UNSIGNED if unsigned else "s3v4",
                    retries={"mode": "standard", "total_max_attempts": attempts}, connect_timeout=5, read_timeout=30)
    account = server.accounts[access_key] if access_key in server.accounts else None
    if unsigned:
        creds = {}
    else:
        creds = dict(aws_access_key_id=access_key,
                     aws_secret_access_key=secret if secret is not None else account.secret,
                     aws_session_token=token if token is not None else (account.token if account else None))
    return _session.client("s3", endpoint_url=server.endpoint, region_name=region, config=config, **creds)


def error_of(call):
    with pytest.raises(ClientError) as info:
        call()
    err = info.value.response
    return err["ResponseMetadata"]["HTTPStatusCode"], err["Error"].get("Code"), err["Error"].get("Message")


def signed(server, method, path, body=b"", headers=None, access_key=MAIN, secret=None, region="us-east-1",
           when=None, query=""):
    """A request signed by botocore's S3 signer, at `when` (default now): (headers, body)."""
    request = botocore.awsrequest.AWSRequest(method=method, url=server.endpoint + path + (f"?{query}" if query else ""),
                                             data=body, headers=dict(headers or {}))
    account = server.accounts[access_key]
    signer = botocore.auth.S3SigV4Auth(
        botocore.credentials.Credentials(access_key, secret or account.secret, account.token), "s3", region)
    when = when or datetime.datetime.now(datetime.timezone.utc)
    request.context["timestamp"] = when.strftime(botocore.auth.SIGV4_TIMESTAMP)
    signer._modify_request_before_signing(request)  # add_auth with the time given
    if "X-Amz-Content-SHA256" in (headers or {}):  # botocore put the body's there: the one asked for
        del request.headers["X-Amz-Content-SHA256"]
        request.headers["X-Amz-Content-SHA256"] = headers["X-Amz-Content-SHA256"]
    canonical = signer.canonical_request(request)
    signer._inject_signature_to_request(request, signer.signature(signer.string_to_sign(request, canonical), request))
    return dict(request.headers.items()), body


def send(server, method, path, headers, body=b"", query=""):
    """(status, headers, body) of a raw request."""
    parts = urllib.parse.urlsplit(server.endpoint)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(method, path + (f"?{query}" if query else ""), body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_put_get_and_ranges_through_the_proxy(server):
    s3 = client(server)
    key = "dir/a b+c=d%e&f~é!.bin"
    data = bytes(range(256)) * 40
    s3.put_object(Bucket="bucket", Key=key, Body=data)
    assert server.get_object("bucket", key) == data
    assert server.keys("bucket", prefix="dir/") == [key]
    assert s3.get_object(Bucket="bucket", Key=key)["Body"].read() == data
    got = s3.get_object(Bucket="bucket", Key=key, Range="bytes=100-199")
    assert (got["ResponseMetadata"]["HTTPStatusCode"], got["ContentRange"]) == (206, f"bytes 100-199/{len(data)}")
    assert got["Body"].read() == data[100:200]
    # What s3rver gets wrong, the proxy serves as S3 does.
    got = s3.get_object(Bucket="bucket", Key=key, Range="bytes=0-0")
    assert (got["ContentRange"], got["Body"].read()) == (f"bytes 0-0/{len(data)}", data[:1])
    got = s3.get_object(Bucket="bucket", Key=key, Range="bytes=-5")
    assert got["Body"].read() == data[-5:]
    assert error_of(lambda: s3.get_object(Bucket="bucket", Key=key, Range=f"bytes={len(data)}-"))[:2] == \
        (416, "InvalidRange")
    head = s3.head_object(Bucket="bucket", Key=key)
    assert head["ContentLength"] == len(data) and head["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    assert error_of(lambda: s3.get_object(Bucket="bucket", Key=key, IfMatch='"other"'))[:2] == \
        (412, "PreconditionFailed")
    assert error_of(lambda: s3.get_object(Bucket="bucket", Key="missing"))[:2] == (404, "NoSuchKey")
    assert error_of(lambda: s3.head_object(Bucket="bucket", Key="missing"))[0] == 404
    assert error_of(lambda: s3.get_object(Bucket="nobucket", Key="x"))[:2] == (404, "NoSuchBucket")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="bucket", Prefix="dir/a b+c=d%")["Contents"]] == [key]
    puts = [r for r in server.requests if r.method == "PUT"]
    assert [(r.key, r.body_length, r.status, r.access_key) for r in puts] == [(key, len(data), 200, MAIN)]
    ranged = [r.headers["range"] for r in server.requests if "range" in r.headers]
    assert ranged == ["bytes=100-199", "bytes=0-0", "bytes=-5", f"bytes={len(data)}-", ]
    assert [r.response_length for r in server.requests if r.headers.get("range") == "bytes=0-0"] == [1]


def test_a_wrong_secret_is_refused(server):
    s3 = client(server, secret="not-" + server.accounts[MAIN].secret)
    assert error_of(lambda: s3.put_object(Bucket="bucket", Key="wrong", Body=b"x"))[:2] == \
        (403, "SignatureDoesNotMatch")
    assert error_of(lambda: s3.get_object(Bucket="bucket", Key="wrong"))[:2] == (403, "SignatureDoesNotMatch")
    assert server.get_object("bucket", "wrong") is None
    assert [(r.method, r.status, r.code) for r in server.requests] == \
        [("PUT", 403, "SignatureDoesNotMatch"), ("GET", 403, "SignatureDoesNotMatch")]
    # A HEAD's refusal has no body; nothing logged shows a secret or a signature.
    headers, _ = signed(server, "HEAD", "/bucket/wrong", secret="bad")
    status, answer, body = send(server, "HEAD", "/bucket/wrong", headers)
    assert (status, body, answer["content-type"]) == (403, b"", "application/xml")
    logged = repr(server.requests)
    leaks = [a.secret in logged or (a.token or "\0") in logged for a in server.accounts.values()]
    leaks.append(headers["Authorization"].rpartition("=")[2] in logged)
    assert "Signature=<redacted>" in logged and not any(leaks)  # (no secret shown if it fails)


def test_an_unknown_key_and_a_wrong_region_are_refused(server):
    s3 = client(server, access_key="AKIANOBODY0000000000", secret="whatever")
    assert error_of(lambda: s3.get_object(Bucket="bucket", Key="k"))[:2] == (403, "InvalidAccessKeyId")
    headers, _ = signed(server, "GET", "/bucket/k", region="eu-west-1")
    status, _, body = send(server, "GET", "/bucket/k", headers)
    assert status == 400 and b"<Code>AuthorizationHeaderMalformed</Code>" in body and b"<Region>us-east-1<" in body


def test_anonymous_access(server):
    server.put_object("bucket", "private.bin", b"secret data")
    server.put_object("public", "open.bin", b"open data")
    anonymous = client(server, unsigned=True)
    assert error_of(lambda: anonymous.get_object(Bucket="bucket", Key="private.bin"))[:2] == (403, "AccessDenied")
    assert anonymous.get_object(Bucket="public", Key="open.bin")["Body"].read() == b"open data"
    assert anonymous.head_object(Bucket="public", Key="open.bin")["ContentLength"] == 9
    assert error_of(lambda: anonymous.put_object(Bucket="public", Key="new", Body=b"x"))[:2] == (403, "AccessDenied")
    assert server.get_object("public", "new") is None
    assert [(r.method, r.status, r.access_key) for r in server.requests] == \
        [("GET", 403, None), ("GET", 200, None), ("HEAD", 200, None), ("PUT", 403, None)]


def test_session_tokens(server):
    good = client(server, access_key=TOKEN)
    good.put_object(Bucket="bucket", Key="with-token", Body=b"t")
    assert good.get_object(Bucket="bucket", Key="with-token")["Body"].read() == b"t"
    wrong = client(server, access_key=TOKEN, token="session-wrong")
    assert error_of(lambda: wrong.get_object(Bucket="bucket", Key="with-token"))[:2] == (403, "InvalidToken")
    missing = client(server, access_key=TOKEN, token="")
    assert error_of(lambda: missing.get_object(Bucket="bucket", Key="with-token"))[:2] == (403, "InvalidToken")
    extra = client(server, access_key=MAIN, token="session-not-wanted")
    assert error_of(lambda: extra.get_object(Bucket="bucket", Key="with-token"))[:2] == (403, "InvalidToken")
    expired = client(server, access_key=EXPIRED)
    assert error_of(lambda: expired.get_object(Bucket="bucket", Key="with-token")) == \
        (400, "ExpiredToken", "The provided token has expired.")
    assert server.requests[0].headers["x-amz-security-token"] == "<redacted>"


def test_multipart_upload_completes(server):
    s3 = client(server)
    parts_data = [os.urandom(5 * MIB), os.urandom(5 * MIB + 7), os.urandom(MIB // 3)]
    upload = s3.create_multipart_upload(Bucket="bucket", Key="big/model.bin")["UploadId"]
    assert server.open_uploads() == [("big/model.bin", upload)]
    listed = s3.list_multipart_uploads(Bucket="bucket")["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in listed] == [("big/model.bin", upload)]
    parts = []
    for number, data in enumerate(parts_data, 1):
        etag = s3.upload_part(Bucket="bucket", Key="big/model.bin", UploadId=upload, PartNumber=number,
                              Body=data)["ETag"]
        parts.append({"PartNumber": number, "ETag": etag})
    s3.complete_multipart_upload(Bucket="bucket", Key="big/model.bin", UploadId=upload,
                                 MultipartUpload={"Parts": parts})
    assert server.get_object("bucket", "big/model.bin") == b"".join(parts_data)
    assert server.open_uploads() == []
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="bucket")
    uploaded = [(r.query["partNumber"], r.body_length) for r in server.requests if "partNumber" in r.query]
    assert uploaded == [(str(n), len(d)) for n, d in enumerate(parts_data, 1)]
    # Parts of a finished upload are refused (s3rver would make it anew).
    assert error_of(lambda: s3.upload_part(Bucket="bucket", Key="big/model.bin", UploadId=upload, PartNumber=4,
                                           Body=b"late"))[:2] == (404, "NoSuchUpload")
    assert server.open_uploads() == []


def test_completion_is_checked_as_s3_does(server):
    s3 = client(server)
    upload = s3.create_multipart_upload(Bucket="bucket", Key="small-parts")["UploadId"]
    etags = [s3.upload_part(Bucket="bucket", Key="small-parts", UploadId=upload, PartNumber=n, Body=b"p" * 1000)["ETag"]
             for n in (1, 2)]

    def complete(parts, key="small-parts"):
        return s3.complete_multipart_upload(Bucket="bucket", Key=key, UploadId=upload,
                                            MultipartUpload={"Parts": parts})
    assert error_of(lambda: complete([{"PartNumber": 1, "ETag": etags[0]}, {"PartNumber": 2, "ETag": etags[1]}]))[:2] \
        == (400, "EntityTooSmall")
    assert error_of(lambda: complete([{"PartNumber": 1, "ETag": '"0000"'}]))[:2] == (400, "InvalidPart")
    assert error_of(lambda: complete([{"PartNumber": 3, "ETag": etags[0]}]))[:2] == (400, "InvalidPart")
    assert error_of(lambda: complete([{"PartNumber": 2, "ETag": etags[1]}, {"PartNumber": 1, "ETag": etags[0]}]))[:2] \
        == (400, "InvalidPartOrder")
    assert error_of(lambda: complete([{"PartNumber": 1, "ETag": etags[0]}], key="other-key"))[:2] == \
        (404, "NoSuchUpload")
    complete([{"PartNumber": 1, "ETag": etags[0]}])  # one part may be small: it is the last
    assert server.get_object("bucket", "small-parts") == b"p" * 1000 and server.open_uploads() == []


def test_an_aborted_upload_is_gone(server):
    s3 = client(server)
    upload = s3.create_multipart_upload(Bucket="bucket", Key="aborted.bin")["UploadId"]
    s3.upload_part(Bucket="bucket", Key="aborted.bin", UploadId=upload, PartNumber=1, Body=b"x" * 100)
    folder = server.upload_dir("bucket", upload)
    assert folder.is_dir() and server.open_uploads() == [("aborted.bin", upload)]
    answer = s3.abort_multipart_upload(Bucket="bucket", Key="aborted.bin", UploadId=upload)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert not folder.exists() and server.open_uploads() == []
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="bucket")
    assert server.get_object("bucket", "aborted.bin") is None
    assert error_of(lambda: s3.abort_multipart_upload(Bucket="bucket", Key="aborted.bin", UploadId=upload))[:2] == \
        (404, "NoSuchUpload")
    assert error_of(lambda: s3.upload_part(Bucket="bucket", Key="aborted.bin", UploadId=upload, PartNumber=2,
                                           Body=b"y"))[:2] == (404, "NoSuchUpload")
    assert not folder.exists()
    # A leak is seen in s3rver's folder too, whoever made it.
    leaked = server.upload_dir("bucket", "0123abcd")
    leaked.mkdir(parents=True)
    (leaked / "key").write_text("leaked.bin")
    assert server.open_uploads() == [("leaked.bin", "0123abcd")]
    s3.abort_multipart_upload(Bucket="bucket", Key="leaked.bin", UploadId="0123abcd")
    assert server.open_uploads() == []


def test_slow_down_is_retried_by_boto3(server):
    s3 = client(server, attempts=3)
    server.put_object("bucket", "retry.bin", b"after a retry")
    server.fail_next(503, "SlowDown", method="GET")
    assert s3.get_object(Bucket="bucket", Key="retry.bin")["Body"].read() == b"after a retry"
    assert [(r.method, r.status, r.code, r.fault) for r in server.requests] == \
        [("GET", 503, "SlowDown", "fail"), ("GET", 200, None, None)]
    assert server.faults_hit == 1
    server.fail_next(500, "InternalError", count=5, query_has="uploads")
    assert error_of(lambda: s3.create_multipart_upload(Bucket="bucket", Key="never"))[:2] == (500, "InternalError")
    assert server.faults_hit == 4 and server.open_uploads() == []  # 3 attempts, 2 faults left
    server.clear_faults()
    server.fail_next(403, "AccessDenied", method="PUT")
    assert error_of(lambda: s3.put_object(Bucket="bucket", Key="denied", Body=b"x"))[:2] == (403, "AccessDenied")
    assert server.get_object("bucket", "denied") is None


def test_cut_connections(server):
    server.put_object("bucket", "cut.bin", b"0123456789" * 10)
    server.cut_next(method="GET", after_bytes=30)
    headers, _ = signed(server, "GET", "/bucket/cut.bin")
    with pytest.raises(http.client.IncompleteRead) as info:
        send(server, "GET", "/bucket/cut.bin", headers)
    assert info.value.partial == b"0123456789" * 3
    assert [(r.status, r.response_length, r.fault) for r in server.requests] == [(200, 30, "cut")]
    # Cut before any answer: boto3 retries, and the PUT (forwarded each time) lands.
    server.cut_next(method="PUT", after_bytes=-1)
    client(server).put_object(Bucket="bucket", Key="cut-put", Body=b"landed")
    assert server.get_object("bucket", "cut-put") == b"landed"
    assert [(r.method, r.fault) for r in server.requests[1:]] == [("PUT", "cut"), ("PUT", None)]
    assert server.faults_hit == 2


def test_tampered_requests_are_refused(server):
    headers, body = signed(server, "PUT", "/bucket/raw.bin", body=b"the signed body")
    assert send(server, "PUT", "/bucket/raw.bin", headers, body)[0] == 200
    # The body changed after signing: its SHA-256 is not the signed one.
    status, _, answer = send(server, "PUT", "/bucket/raw.bin", headers, b"another body!!!")
    assert status == 400 and b"<Code>XAmzContentSHA256Mismatch</Code>" in answer
    assert server.get_object("bucket", "raw.bin") == b"the signed body"
    # The header changed with it: the signature no longer matches.
    forged = {**headers, "X-Amz-Content-SHA256": hashlib.sha256(b"another body!!!").hexdigest()}
    status, _, answer = send(server, "PUT", "/bucket/raw.bin", forged, b"another body!!!")
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in answer and b"<CanonicalRequest>" in answer
    # An x-amz-* header that was not signed; a signed request without x-amz-content-sha256.
    status, _, answer = send(server, "PUT", "/bucket/raw.bin", {**headers, "x-amz-meta-added": "1"}, body)
    assert status == 403 and b"<HeadersNotSigned>x-amz-meta-added</HeadersNotSigned>" in answer
    stripped = {k: v for k, v in headers.items() if k.lower() != "x-amz-content-sha256"}
    assert send(server, "PUT", "/bucket/raw.bin", stripped, body)[0] == 400
    # A clock 20 minutes off.
    late, _ = signed(server, "GET", "/bucket/raw.bin",
                     when=datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20))
    status, _, answer = send(server, "GET", "/bucket/raw.bin", late)
    assert status == 403 and b"<Code>RequestTimeTooSkewed</Code>" in answer
    # UNSIGNED-PAYLOAD is taken; the query is part of what is signed.
    unsigned, _ = signed(server, "GET", "/bucket", headers={"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"},
                         query="list-type=2&prefix=raw")
    status, _, answer = send(server, "GET", "/bucket", unsigned, query="list-type=2&prefix=raw")
    assert status == 200 and b"<Key>raw.bin</Key>" in answer
    assert send(server, "GET", "/bucket", unsigned, query="list-type=2&prefix=r")[0] == 403
    codes = [r.code for r in server.requests]
    assert codes == [None, "XAmzContentSHA256Mismatch", "SignatureDoesNotMatch", "AccessDenied", "InvalidRequest",
                     "RequestTimeTooSkewed", None, "SignatureDoesNotMatch"]


def test_unsigned_payloads_and_chunked_bodies(server):
    headers, _ = signed(server, "PUT", "/bucket/chunked", headers={"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
    parts = urllib.parse.urlsplit(server.endpoint)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:  # libcurl sends a body of unknown length so; then two more requests on the same connection
        conn.request("PUT", "/bucket/chunked", body=iter([b"abc", b"defg", b"h"]), encode_chunked=True,
                     headers={**headers, "Transfer-Encoding": "chunked"})
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"")
        for _ in range(2):
            conn.request("GET", "/bucket/chunked", headers=signed(server, "GET", "/bucket/chunked")[0])
            resp = conn.getresponse()
            assert (resp.status, resp.read()) == (200, b"abcdefgh")
    finally:
        conn.close()
    assert [(r.method, r.body_length, r.response_length) for r in server.requests] == \
        [("PUT", 8, 0), ("GET", 0, 8), ("GET", 0, 8)]


def test_aws_env_isolates_the_client(server, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "users-own")
    env = aws_env(server)
    assert env["AWS_ACCESS_KEY_ID"] == MAIN and env["AWS_SECRET_ACCESS_KEY"] == ACCOUNTS[MAIN]
    assert env["AWS_ENDPOINT_URL"] == server.endpoint and env["AWS_REGION"] == "us-east-1"
    assert "AWS_PROFILE" not in env and "AWS_SESSION_TOKEN" not in env
    assert not os.path.exists(env["AWS_CONFIG_FILE"]) and not os.path.exists(env["AWS_SHARED_CREDENTIALS_FILE"])
    assert os.path.isdir(env["HOME"]) and os.listdir(env["HOME"]) == []
    env = aws_env(server, AWS_REGION="eu-west-1", AWS_SECRET_ACCESS_KEY=None)
    assert env["AWS_REGION"] == "eu-west-1" and "AWS_SECRET_ACCESS_KEY" not in env


def test_default_account_and_missing_s3rver(tmp_path, monkeypatch):
    with s3_server(tmp_path / "one", buckets=("b1", "b2")) as server:
        assert server.access_key == s3_servers.DEFAULT_ACCESS_KEY and len(server.secret_key) > 20
        env = aws_env(server)
        s3 = _session.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=env["AWS_REGION"],
                             aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                             aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                             config=Config(s3={"addressing_style": "path"}))
        s3.put_object(Bucket="b2", Key="k", Body=b"v")
        assert server.keys("b2") == ["k"] and server.keys("b1") == []
    monkeypatch.setenv("TLIO_S3RVER", str(tmp_path / "nowhere" / "s3rver"))
    with pytest.raises(RuntimeError, match="bash scripts/install-deps.sh"):
        with s3_server(tmp_path / "two"):
            pass
