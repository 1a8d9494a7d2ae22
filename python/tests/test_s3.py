"""s3://, gs:// and hf:// against real servers on 127.0.0.1: s3rver behind a proxy that checks
every request's Signature V4 with botocore (s3_servers.py), and nginx as a Hub. Reads must give
the local bytes; writes must appear whole or not at all, leaving no upload open."""
import hashlib
import json
import os
import pathlib
import signal
import subprocess
import time

import numpy as np
import pytest

import tlio
import tlio.numpy
from http_servers import nginx
from s3_servers import aws_env, s3_server, use_aws_env

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
MiB = 1 << 20


def run(*args, env):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s3")
    accounts = {"AKIAMAIN": "main-secret-0123456789", "AKIATOKEN": {"secret": "token-secret", "token": "tok-123"},
                "AKIAEXPIRED": {"secret": "old-secret", "token": "old-token", "expired": True}}
    with s3_server(tmp, accounts=accounts, buckets=("bucket", "public"), public_buckets=("public",)) as server:
        yield server


@pytest.fixture(autouse=True)
def clean_faults(s3):
    s3.clear_faults()
    yield
    s3.clear_faults()
    assert not s3.errors, s3.errors


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A 20 MiB file: three parts of a multipart upload (8 + 8 + 4 MiB)."""
    path = tmp_path_factory.mktemp("big") / "big.safetensors"
    rng = np.random.default_rng(7)
    tlio.numpy.save_file({"w": rng.standard_normal(5 * MiB, dtype=np.float32).reshape(1280, 4096),
                          "b": np.arange(1000, dtype=np.int64)}, path, metadata={"format": "pt"})
    return path


def secrets_absent(out, *secrets):
    for s in secrets:
        assert s not in out.stdout and s not in out.stderr


def test_upload_in_parts_then_read_back(s3, big, tmp_path):
    env = aws_env(s3)
    before = len(s3.requests)
    out = run("convert", big, "s3://bucket/models/big.safetensors", env=env)
    assert out.returncode == 0, out.stderr
    assert s3.get_object("bucket", "models/big.safetensors") == big.read_bytes()
    parts = [r for r in s3.requests[before:] if r.method == "PUT" and "partNumber" in r.query]
    assert sorted(int(r.query["partNumber"]) for r in parts) == [1, 2, 3]
    started = [r for r in s3.requests[before:] if r.method == "POST" and "uploads" in r.query]
    assert [r.headers.get("content-type") for r in started] == ["application/octet-stream"]
    assert sorted(r.body_length for r in parts) == [4 * MiB + big.stat().st_size - 20 * MiB, 8 * MiB, 8 * MiB]
    # Every part's SHA-256 is signed (the proxy compared each with the body it received).
    assert all(r.headers["x-amz-content-sha256"] != "UNSIGNED-PAYLOAD" for r in parts)
    assert s3.open_uploads() == []
    # Read back: validate, diff against the source, and a download.
    assert run("validate", "s3://bucket/models/big.safetensors", env=env).returncode == 0
    diff = run("diff", big, "s3://bucket/models/big.safetensors", env=env)
    assert diff.returncode == 0 and "identical" in diff.stdout, diff.stdout + diff.stderr
    back = tmp_path / "back.safetensors"
    assert run("convert", "s3://bucket/models/big.safetensors", back, env=env).returncode == 0
    assert back.read_bytes() == big.read_bytes()
    secrets_absent(out, "main-secret-0123456789")


def test_small_object_is_one_put(s3):
    before = len(s3.requests)
    src = DATA / "hf" / "worked_example.safetensors"
    assert run("convert", src, "s3://bucket/small.safetensors", env=aws_env(s3)).returncode == 0
    writes = [r for r in s3.requests[before:] if r.method in ("PUT", "POST")]
    assert [(r.method, r.query) for r in writes] == [("PUT", {})]
    assert s3.get_object("bucket", "small.safetensors") == src.read_bytes()


def test_odd_objects_get_clear_errors(s3):
    env = aws_env(s3)
    s3.put_object("bucket", "empty.safetensors", b"")
    out = run("validate", "s3://bucket/empty.safetensors", env=env)
    assert out.returncode == 1 and "0 bytes" in out.stderr, out.stderr
    out = run("validate", "s3://nobucket/x.safetensors", env=env)
    assert out.returncode == 1 and "NoSuchBucket" in out.stderr, out.stderr
    out = run("convert", DATA / "hf" / "worked_example.safetensors", "s3://bucket", env=env)
    assert out.returncode == 1 and "names a folder" in out.stderr, out.stderr
    out = run("convert", DATA / "hf" / "worked_example.safetensors", "http://127.0.0.1:1/x.safetensors", env=env)
    assert out.returncode == 1 and "cannot be written" in out.stderr, out.stderr


def test_python_api_reads_and_writes(s3, monkeypatch, big):
    use_aws_env(monkeypatch, s3)
    tensors = {"x": np.arange(12, dtype=np.float32).reshape(3, 4), "y": np.ones(5, np.int8)}
    tlio.numpy.save_file(tensors, "s3://bucket/py/out.safetensors", metadata={"a": "b"})
    back = tlio.numpy.load_file("s3://bucket/py/out.safetensors")
    assert set(back) == {"x", "y"} and np.array_equal(back["x"], tensors["x"])
    with tlio.safe_open("s3://bucket/py/out.safetensors", framework="np") as f:
        assert f.metadata() == {"a": "b"}
        assert np.array_equal(f.get_slice("x")[1:, 2:], tensors["x"][1:, 2:])
    with pytest.raises(FileNotFoundError, match="NoSuchKey"):
        tlio.numpy.load_file("s3://bucket/py/missing.safetensors")
    torch = pytest.importorskip("torch")
    tlio_torch = pytest.importorskip("tlio.torch")
    t = tlio_torch.load_file("s3://bucket/py/out.safetensors")
    assert torch.equal(t["x"], torch.arange(12, dtype=torch.float32).reshape(3, 4))


def test_profiles_from_the_files(s3, tmp_path):
    creds, conf = tmp_path / "credentials", tmp_path / "config"
    creds.write_text("[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n"
                     "[work]\naws_access_key_id = AKIAMAIN\naws_secret_access_key = main-secret-0123456789\n")
    conf.write_text(f"[profile work]\nregion = us-east-1\nendpoint_url = {s3.endpoint}\n")
    s3.put_object("bucket", "prof.safetensors", (DATA / "hf" / "worked_example.safetensors").read_bytes())
    env = aws_env(s3, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None, AWS_ENDPOINT_URL=None,
                  AWS_SHARED_CREDENTIALS_FILE=creds, AWS_CONFIG_FILE=conf, AWS_PROFILE="work")
    out = run("validate", "s3://bucket/prof.safetensors", env=env)
    assert out.returncode == 0, out.stderr
    env["AWS_PROFILE"] = "missing"
    out = run("validate", "s3://bucket/prof.safetensors", env=env)
    assert out.returncode != 0 and "'missing'" in out.stderr


def test_session_tokens_and_expiry(s3):
    s3.put_object("bucket", "tok.safetensors", (DATA / "hf" / "worked_example.safetensors").read_bytes())
    good = aws_env(s3, AWS_ACCESS_KEY_ID="AKIATOKEN", AWS_SECRET_ACCESS_KEY="token-secret", AWS_SESSION_TOKEN="tok-123")
    assert run("validate", "s3://bucket/tok.safetensors", env=good).returncode == 0
    wrong = {**good, "AWS_SESSION_TOKEN": "tok-999"}
    out = run("validate", "s3://bucket/tok.safetensors", env=wrong)
    assert out.returncode == 1 and "InvalidToken" in out.stderr and "tok-999" not in out.stderr
    expired = aws_env(s3, AWS_ACCESS_KEY_ID="AKIAEXPIRED", AWS_SECRET_ACCESS_KEY="old-secret", AWS_SESSION_TOKEN="old-token")
    out = run("validate", "s3://bucket/tok.safetensors", "--json", env=expired)
    assert out.returncode == 1 and "expired" in json.loads(out.stdout)["results"][0]["error"]["message"]
    secrets_absent(out, "old-secret", "old-token")


def test_wrong_secret_is_refused_never_retried(s3):
    s3.put_object("bucket", "sig.safetensors", (DATA / "hf" / "worked_example.safetensors").read_bytes())
    before = len(s3.requests)
    env = aws_env(s3, AWS_SECRET_ACCESS_KEY="not-the-secret")
    out = run("inspect", "s3://bucket/sig.safetensors", "--json", env=env)
    assert out.returncode == 1
    assert "SignatureDoesNotMatch" in out.stderr and "bucket 'bucket', key 'sig.safetensors'" in out.stderr
    assert len(s3.requests) - before == 1  # refused: not retried
    secrets_absent(out, "not-the-secret")
    err = json.loads(out.stdout)["error"]
    assert err["errno"] == 13  # EACCES


def test_anonymous_reads_public_buckets_only(s3, monkeypatch):
    data = (DATA / "hf" / "worked_example.safetensors").read_bytes()
    s3.put_object("public", "open.safetensors", data)
    s3.put_object("bucket", "closed.safetensors", data)
    anon = aws_env(s3, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None)
    assert run("validate", "s3://public/open.safetensors", env=anon).returncode == 0
    out = run("validate", "s3://bucket/closed.safetensors", env=anon)
    assert out.returncode == 1 and "AccessDenied" in out.stderr and "unsigned" in out.stderr
    # --no-sign-request, with credentials present, sends nothing signed.
    signed = aws_env(s3)
    assert run("validate", "--no-sign-request", "s3://public/open.safetensors", env=signed).returncode == 0
    assert s3.requests[-1].access_key is None
    use_aws_env(monkeypatch, s3, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None)
    with pytest.raises(PermissionError, match="AccessDenied"):
        tlio.numpy.load_file("s3://bucket/closed.safetensors")


def test_busy_store_and_cut_connections_are_retried(s3, big):
    s3.put_object("bucket", "retry.safetensors", big.read_bytes())
    env = aws_env(s3, TLIO_HTTP_ATTEMPTS=4)
    s3.fail_next(503, "SlowDown", count=1, method="GET")
    s3.cut_next(count=1, method="GET", after_bytes=100_000, query_has=None)
    out = run("validate", "s3://bucket/retry.safetensors", env=env)
    assert out.returncode == 0, out.stderr
    assert s3.faults_hit == 2
    s3.fail_next(500, "InternalError", count=1, method="PUT")
    assert run("convert", big, "s3://bucket/retry-out.safetensors", env=env).returncode == 0
    assert s3.get_object("bucket", "retry-out.safetensors") == big.read_bytes()
    assert s3.open_uploads() == []


def test_failed_upload_is_aborted_and_the_old_object_stays(s3, big):
    old = (DATA / "hf" / "worked_example.safetensors").read_bytes()
    s3.put_object("bucket", "keep.safetensors", old)
    s3.fail_next(403, "AccessDenied", count=1, method="PUT", query_has="partNumber")
    out = run("convert", big, "s3://bucket/keep.safetensors", env=aws_env(s3))
    assert out.returncode == 1 and "AccessDenied" in out.stderr
    assert s3.get_object("bucket", "keep.safetensors") == old
    assert s3.open_uploads() == []
    assert any(r.method == "DELETE" and "uploadId" in r.query for r in s3.requests)


def test_interrupted_upload_leaves_no_object_and_no_upload(s3, tmp_path):
    path = tmp_path / "large.safetensors"
    tlio.numpy.save_file({"w": np.zeros(200 * MiB // 4, np.float32)}, path)
    before = len(s3.requests)
    proc = subprocess.Popen([CLI, "convert", str(path), "s3://bucket/interrupted.safetensors"], env=aws_env(s3),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not any("partNumber" in r.query for r in s3.requests[before:]):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "aborted" in err
    assert s3.get_object("bucket", "interrupted.safetensors") is None
    assert s3.open_uploads() == []


def test_folder_outputs_write_the_index_last(s3, big):
    env = aws_env(s3)
    before = len(s3.requests)
    out = run("shard", big, "s3://bucket/sharded/", "--max-size", "12MB", env=env)
    assert out.returncode == 0, out.stderr
    created = [r.key for r in s3.requests[before:] if r.method in ("PUT", "POST") and
               not r.query.get("partNumber") and "uploadId" not in r.query]
    assert created[-1] == "sharded/model.safetensors.index.json"
    assert s3.keys("bucket", "sharded/") == ["sharded/model-00001-of-00002.safetensors",
                                             "sharded/model-00002-of-00002.safetensors",
                                             "sharded/model.safetensors.index.json"]
    merged = run("merge", "s3://bucket/sharded", "s3://bucket/merged.safetensors", env=env)
    assert merged.returncode == 0, merged.stderr
    assert run("diff", big, "s3://bucket/merged.safetensors", env=env).returncode == 0
    # A model directory under a prefix, read by its file names (no listing).
    for name in ("config.json", "model.safetensors"):
        s3.put_object("bucket", f"bigram/{name}", (DATA / "models" / "bigram" / name).read_bytes())
    out = run("inspect", "s3://bucket/bigram/", env=env)
    assert out.returncode == 0 and "bigram" in out.stdout, out.stderr


def test_import_reads_a_remote_checkpoint(s3, tmp_path):
    src = DATA / "checkpoints" / "small_zip.pt"
    s3.put_object("bucket", "ck/small_zip.pt", src.read_bytes())
    out = run("import", "s3://bucket/ck/small_zip.pt", "s3://bucket/ck/imported.safetensors", env=aws_env(s3))
    assert out.returncode == 0, out.stderr
    local = tmp_path / "local.safetensors"
    assert run("import", src, local, env=aws_env(s3)).returncode == 0
    assert s3.get_object("bucket", "ck/imported.safetensors") == local.read_bytes()


def test_gs_through_the_xml_api(tmp_path):
    # Cloud Storage's XML API takes SigV4 with HMAC keys, signed for the region "auto".
    with s3_server(tmp_path, accounts={"GOOGKEY": "goog-secret"}, region="auto") as gcs:
        env = aws_env(gcs, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None, AWS_ENDPOINT_URL=None,
                      GOOGLE_ACCESS_KEY_ID="GOOGKEY", GOOGLE_SECRET_ACCESS_KEY="goog-secret",
                      TLIO_GS_ENDPOINT_URL=gcs.endpoint)
        src = DATA / "hf" / "mixed_all_dtypes.safetensors"
        out = run("convert", src, "gs://bucket/gs/x.safetensors", env=env)
        assert out.returncode == 0, out.stderr
        assert gcs.get_object("bucket", "gs/x.safetensors") == src.read_bytes()
        assert gcs.requests[-1].headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=GOOGKEY/")
        assert run("validate", "gs://bucket/gs/x.safetensors", env=env).returncode == 0
        assert not gcs.errors


def test_hf_from_a_hub_and_from_the_cache(tmp_path):
    src = DATA / "hf" / "worked_example.safetensors"
    root = tmp_path / "hub"
    (root / "org" / "repo" / "resolve" / "main").mkdir(parents=True)
    (root / "org" / "repo" / "resolve" / "main" / "model.safetensors").write_bytes(src.read_bytes())
    (root / "datasets" / "org" / "data" / "resolve" / "v1").mkdir(parents=True)
    (root / "datasets" / "org" / "data" / "resolve" / "v1" / "x.safetensors").write_bytes(src.read_bytes())
    home = tmp_path / "home"
    with nginx(root) as server:
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(home), "HF_TOKEN": "hf_secret_token"}
        env.pop("HF_HUB_OFFLINE", None)
        out = run("validate", "hf://org/repo/model.safetensors", env=env)
        assert out.returncode == 0, out.stderr
        assert run("validate", "hf://datasets/org/data@v1/x.safetensors", env=env).returncode == 0
        log = server.log.read_text()
        assert "Bearer hf_secret_token" in log  # the token went to the Hub
        missing = run("validate", "hf://org/repo/nope.safetensors", env=env)
        assert missing.returncode == 1 and "hf://org/repo/nope.safetensors" in missing.stderr
        secrets_absent(missing, "hf_secret_token")
        # The cache answers first, without a request; offline, nothing else is asked.
        commit = "c" * 40
        snap = home / "hub" / "models--org--cached" / "snapshots" / commit
        snap.mkdir(parents=True)
        (snap / "model.safetensors").write_bytes(src.read_bytes())
        (home / "hub" / "models--org--cached" / "refs").mkdir()
        (home / "hub" / "models--org--cached" / "refs" / "main").write_text(commit)
        requests_before = len(server.log.read_text().splitlines())
        assert run("validate", "hf://org/cached/model.safetensors", env=env).returncode == 0
        offline = {**env, "HF_HUB_OFFLINE": "1"}
        out = run("validate", "hf://org/repo/model.safetensors", env=offline)
        assert out.returncode == 1 and "HF_HUB_OFFLINE" in out.stderr
        time.sleep(0.2)
        assert len(server.log.read_text().splitlines()) == requests_before
