"""Files over HTTP: Debian's nginx on 127.0.0.1 serving the test data, and a server of faults.
The remote reading must give the local bytes, with only the requests it needs."""
import json
import os
import pathlib
import shutil
import subprocess
import time

import numpy as np
import pytest

import tlio
import tlio.numpy
from http_servers import fault_server, nginx

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def run(*args, env=None):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def log_lines(server):
    """The access log's lines, once nginx has written all of them (it logs a request after
    answering it, so the client may be done first)."""
    lines = None
    while True:
        now = server.log.read_text().splitlines() if server.log.exists() else []
        if now == lines:
            return now
        lines = now
        time.sleep(0.05)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    for name in ["worked_example.safetensors", "mixed_all_dtypes.safetensors", "many_1000.safetensors",
                 "zero_size.safetensors", "no_metadata.safetensors"]:
        (root / name).write_bytes((DATA / "hf" / name).read_bytes())
    # A header longer than the first request (128 KiB): 3000 tensors with long names.
    big = {f"model.layers.{i}.some.rather.long.parameter.name.weight": np.full(4, i, np.float32) for i in range(3000)}
    tlio.numpy.save_file(big, root / "long_header.safetensors")
    # Model directories: a bigram model (one file), and a sharded one with an index.
    for model in ["bigram", "sharded"]:
        shutil.copytree(DATA / "models" / model, root / model)
    shutil.copy(DATA / "quant" / "tiny_model.safetensors", root)
    (root / "empty.safetensors").write_bytes(b"")
    with nginx(root) as server:
        server.root = root
        yield server


@pytest.mark.parametrize("name", ["worked_example", "mixed_all_dtypes", "many_1000", "zero_size", "no_metadata"])
def test_remote_reads_equal_local(served, name, tmp_path):
    url = f"{served.url}/{name}.safetensors"
    local = served.root / f"{name}.safetensors"
    with tlio.safe_open(url, "np") as r, tlio.safe_open(local, "np") as l:
        assert r.keys() == l.keys() and r.metadata() == l.metadata()
        for k in l.keys():
            assert r.get_tensor(k, dtype="bits").tobytes() == l.get_tensor(k, dtype="bits").tobytes()
    a, b = run("inspect", "--json", url), run("inspect", "--json", local)
    assert a.returncode == 0, a.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    ja.pop("path"), jb.pop("path")
    assert ja == jb
    assert run("convert", url, tmp_path / "r.safetensors").returncode == 0
    assert run("convert", local, tmp_path / "l.safetensors").returncode == 0
    assert (tmp_path / "r.safetensors").read_bytes() == (tmp_path / "l.safetensors").read_bytes()
    assert run("validate", url).returncode == 0


def test_only_the_bytes_needed(served):
    before = len(log_lines(served))
    url = f"{served.url}/long_header.safetensors"
    out = run("inspect", url)
    assert out.returncode == 0, out.stderr
    lines = log_lines(served)[before:]
    header = 8 + int.from_bytes((served.root / "long_header.safetensors").read_bytes()[:8], "little")
    assert header > 128 << 10
    assert len(lines) == 2, lines  # the first range, then the exact rest of the header
    sent = sum(int(line.split()[1]) for line in lines)
    assert sent <= header + (128 << 10)
    # One tensor: its bytes and the header, nothing else.
    before = len(log_lines(served))
    with tlio.safe_open(url, "np") as f:
        assert f.get_tensor("model.layers.7.some.rather.long.parameter.name.weight").tolist() == [7] * 4
    lines = log_lines(served)[before:]
    assert len(lines) == 3 and lines[-1].split()[:2] == ["206", "16"], lines


def test_missing_file_is_an_error(served, tmp_path):
    out = run("inspect", f"{served.url}/nope.safetensors")
    assert out.returncode == 1 and "404" in out.stderr
    with pytest.raises(FileNotFoundError):
        tlio.safe_open(f"{served.url}/nope.safetensors", "np")


@pytest.fixture
def files():
    a = tlio.numpy.save({"w": np.arange(100000, dtype=np.float32), "b": np.ones(3, np.int64)})
    b = tlio.numpy.save({"w": np.arange(100000, dtype=np.float32) * 2, "b": np.ones(3, np.int64)})
    assert len(a) == len(b)
    return {"m.safetensors": a, "m.safetensors.v2": b}


def expected_w(files):
    return tlio.load(files["m.safetensors"])["w"]


@pytest.mark.parametrize("fault", ["ignore-range", "cut-once", "fail-once", "busy-once"])
def test_faults_that_still_give_the_right_bytes(files, fault, tmp_path):
    with fault_server(files) as srv:
        out = run("convert", f"{srv.url}/{fault}/m.safetensors", tmp_path / "o.safetensors")
        assert out.returncode == 0, out.stderr
        assert np.array_equal(tlio.load_file(tmp_path / "o.safetensors")["w"], expected_w(files))
        ranges = [r for _, r, _, _ in srv.requests]
        if fault == "cut-once":  # the opening request was cut at half: resumed from there
            assert ranges[:2] == ["bytes=0-131071", "bytes=65536-131071"], ranges
        if fault in ("fail-once", "busy-once"):  # answered 500/429 once, then asked again
            assert ranges[:2] == ["bytes=0-131071", "bytes=0-131071"], ranges


def test_a_server_that_ignores_range_is_read_with_one_whole_download(tmp_path):
    rng = np.random.default_rng(5)
    tensors = {f"t{i}": rng.standard_normal((64, 128)).astype(np.float32) for i in range(40)}
    files = {"big.safetensors": tlio.save(tensors)}  # 1.3 MB: far past the opening request
    with fault_server(files) as srv:
        url = f"{srv.url}/ignore-range/big.safetensors"
        out = run("convert", url, tmp_path / "o.safetensors", "--dtype", "F16")
        assert out.returncode == 0, out.stderr
        assert out.stderr.count("warning:") == 1 and "ignores Range requests" in out.stderr, out.stderr
        assert len(srv.requests) == 2, srv.requests  # the opening request, then one whole GET
        with tlio.safe_open(tmp_path / "o.safetensors", "np") as f:
            for k, v in tensors.items():
                assert np.array_equal(f.get_tensor(k), v.astype(np.float16)), k
        srv.requests.clear()
        with pytest.warns(RuntimeWarning, match="ignores Range requests"):
            with tlio.safe_open(url, "np") as f:
                got = f.get_tensors()
        assert all(np.array_equal(got[k], v) for k, v in tensors.items())
        assert len(srv.requests) == 2, srv.requests


def test_a_file_that_changes_is_an_error_and_leaves_nothing(files, tmp_path):
    with fault_server(files) as srv:
        out = run("convert", f"{srv.url}/changes/m.safetensors", tmp_path / "o.safetensors")
    assert out.returncode == 1 and "changed" in out.stderr, out.stderr
    assert not list(tmp_path.iterdir())


def test_encoded_answers_are_refused(files):
    with fault_server(files) as srv:
        out = run("inspect", f"{srv.url}/gzip/m.safetensors")
    assert out.returncode == 1 and "gzip" in out.stderr


def test_token_goes_to_its_origin_only(files):
    with fault_server(files) as other, fault_server(files, redirect_to=other.url) as srv:
        out = run("inspect", f"{srv.url}/plain/m.safetensors", env={"HF_TOKEN": "secret-token"})
        assert out.returncode == 0 and "secret-token" not in out.stdout + out.stderr
        assert all(auth == "Bearer secret-token" for _, _, auth, _ in srv.requests)
        out = run("inspect", f"{srv.url}/redirect/m.safetensors", env={"HF_TOKEN": "secret-token"})
        assert out.returncode == 0, out.stderr
        assert other.requests and all(auth is None for _, _, auth, _ in other.requests)


def test_a_stalled_server_times_out(files):
    with fault_server(files, stall_seconds=4) as srv:
        out = run("inspect", f"{srv.url}/stall/m.safetensors", env={"TLIO_HTTP_TIMEOUT": "1", "TLIO_HTTP_ATTEMPTS": "2"})
    assert out.returncode == 1 and "2 attempt" in out.stderr, out.stderr


@pytest.mark.parametrize("model", ["bigram", "sharded"])
@pytest.mark.parametrize("slash", ["/", ""])
def test_model_directories_by_url(served, model, slash, tmp_path):
    url, local = f"{served.url}/{model}{slash}", served.root / model
    a, b = run("inspect", "--json", url), run("inspect", "--json", local)
    assert a.returncode == 0, a.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert ja.pop("path") == url and jb.pop("path") == str(local)
    assert ja == jb
    out = run("validate", url)
    assert out.returncode == 0 and out.stdout == f"{url}: OK (model directory)\n", out.stderr
    assert run("merge", url, tmp_path / "r.safetensors").returncode == 0
    assert run("merge", local, tmp_path / "l.safetensors").returncode == 0
    assert (tmp_path / "r.safetensors").read_bytes() == (tmp_path / "l.safetensors").read_bytes()
    if model == "bigram":
        args = ["--prompt", "The ", "--tokens", "40", "--temperature", "0"]
        a, b = run("bigram", "generate", url, *args), run("bigram", "generate", local, *args)
        assert a.returncode == 0 and a.stdout == b.stdout, a.stderr


def test_model_directory_requests(served):
    """No listing: config.json, tokenizer.json for a course model (one byte: is it there), the
    index (404 for a one-file model), then the weights."""
    before = len(log_lines(served))
    assert run("inspect", f"{served.url}/bigram/").returncode == 0
    lines = log_lines(served)[before:]
    assert [(line.split()[0], line.split()[2]) for line in lines] == [
        ("206", '"bytes=0-131071"'), ("404", '"bytes=0-0"'), ("404", '"bytes=0-131071"'),
        ("206", '"bytes=0-131071"')], lines
    before = len(log_lines(served))
    assert run("inspect", f"{served.url}/sharded/").returncode == 0
    shards = len(list((served.root / "sharded").glob("model-*.safetensors")))
    assert shards > 1
    assert len(log_lines(served)[before:]) == 2 + shards


def test_not_a_model_directory_by_url(served):
    out = run("inspect", f"{served.url}/nope/")
    assert out.returncode == 1 and "config.json" in out.stderr, out.stderr


def test_many_tensors_come_in_few_requests(served, tmp_path):
    """1000 touching tensors come in one request, not 1000: for many_1000 (84 KB), the opening
    request's; for the long-header file, one after the header's two."""
    before = len(log_lines(served))
    assert run("convert", f"{served.url}/many_1000.safetensors", tmp_path / "o.safetensors").returncode == 0
    lines = log_lines(served)[before:]
    assert len(lines) == 1, lines
    before = len(log_lines(served))
    assert run("convert", f"{served.url}/long_header.safetensors", tmp_path / "l.safetensors").returncode == 0
    lines = log_lines(served)[before:]
    assert len(lines) == 3, lines
    assert (tmp_path / "l.safetensors").read_bytes() == (served.root / "long_header.safetensors").read_bytes()
    local = tlio.load_file(served.root / "many_1000.safetensors")
    before = len(log_lines(served))
    remote = tlio.load_file(f"{served.url}/many_1000.safetensors")
    assert len(log_lines(served)[before:]) == 1
    assert remote.keys() == local.keys()
    assert all(remote[k].tobytes() == local[k].tobytes() for k in local)


def test_token_option_and_keyword(files):
    with fault_server(files) as srv:
        out = run("inspect", f"{srv.url}/plain/m.safetensors", "--token", "flag-token", env={"HF_TOKEN": ""})
        assert out.returncode == 0 and "flag-token" not in out.stdout + out.stderr
        assert srv.requests and all(auth == "Bearer flag-token" for _, _, auth, _ in srv.requests)
        srv.requests.clear()
        with tlio.safe_open(f"{srv.url}/plain/m.safetensors", "np", token="kw-token") as f:
            assert np.array_equal(f.get_tensor("w"), expected_w(files))
        assert srv.requests and all(auth == "Bearer kw-token" for _, _, auth, _ in srv.requests)


def test_an_empty_remote_file_fails_rule_1_as_on_disk(served, tmp_path):
    (tmp_path / "empty.safetensors").write_bytes(b"")
    remote = run("validate", f"{served.url}/empty.safetensors")
    local = run("validate", tmp_path / "empty.safetensors")
    assert remote.returncode == local.returncode == 1
    assert "rule 1: file is 0 bytes" in remote.stderr and "No error" not in remote.stderr
    assert remote.stderr.split(": rule 1")[1] == local.stderr.split(": rule 1")[1]


def test_a_refused_connection_is_retried_once_not_five_times():
    # A port nothing listens on (bound and closed here, on loopback): one quick retry at most,
    # whatever the attempt count for other failures.
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = run("inspect", f"http://127.0.0.1:{port}/m.safetensors", env={"TLIO_HTTP_ATTEMPTS": "5"})
    assert out.returncode == 1 and "after 2 attempt(s)" in out.stderr, out.stderr
    assert "Connection refused" in out.stderr or "connect" in out.stderr.lower()


def test_an_unknown_url_scheme_is_named():
    out = run("inspect", "ftp://user:pw@example.org/m.safetensors")
    assert out.returncode != 0
    assert "unsupported URL scheme 'ftp'" in out.stderr and "pw@" not in out.stderr
    with pytest.raises(ValueError, match="unsupported URL scheme .ftp."):
        tlio.safe_open("ftp://example.org/m.safetensors", "np")
    out = run("inspect", "FTP://example.org/m.safetensors")  # schemes are case-insensitive
    assert "unsupported URL scheme 'ftp'" in out.stderr, out.stderr


def test_an_upper_case_scheme_is_that_scheme(served):
    url = served.url.replace("http://", "HTTP://") + "/worked_example.safetensors"
    with tlio.safe_open(url, "np") as f:
        assert f.get_tensor("w").tolist() == [[1, 2], [3, 4]]
    out = run("validate", url)
    assert out.returncode == 0, out.stderr


def test_credentials_in_a_url_are_not_printed(served):
    port = served.url.rsplit(":", 1)[1]
    out = run("inspect", f"http://user:hunter2@127.0.0.1:{port}/nope.safetensors")
    assert out.returncode == 1 and "hunter2" not in out.stderr and "127.0.0.1" in out.stderr
    # Nor when the file or model is read: what is printed names it without them.
    for args in (["inspect", "--json"], ["inspect"], ["validate"]):
        for what in ("worked_example.safetensors", "bigram/"):
            out = run(*args, f"http://user:hunter2@127.0.0.1:{port}/{what}")
            assert out.returncode == 0, out.stderr
            assert "hunter2" not in out.stdout + out.stderr and f"127.0.0.1:{port}/{what}" in out.stdout


def test_torch_loads_from_a_url(served):
    torch = pytest.importorskip("torch")
    import tlio.torch

    url, local = f"{served.url}/mixed_all_dtypes.safetensors", served.root / "mixed_all_dtypes.safetensors"
    try:
        want = tlio.torch.load_file(local)
    except ValueError:  # a dtype this torch lacks: use a file of common dtypes
        url, local = f"{served.url}/worked_example.safetensors", served.root / "worked_example.safetensors"
        want = tlio.torch.load_file(local)
    got = tlio.torch.load_file(url)
    assert list(got) == list(want)
    assert all(torch.equal(got[k], want[k]) for k in want)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4))
    tlio.torch.save_model(model, served.root / "model.safetensors")
    fresh = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4))
    assert tlio.torch.load_model(fresh, f"{served.url}/model.safetensors") == ([], [])
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), fresh.state_dict().values()))


def test_every_reading_command_takes_a_url(served, tmp_path):
    """cat, stats, diff, convert --dtype (read chunk by chunk), quantize, dequantize and shard of
    a URL print and write what they do for the local file."""
    url, local = f"{served.url}/tiny_model.safetensors", served.root / "tiny_model.safetensors"
    name = tlio.safe_open(local, "np").keys()[0]
    for args in (["cat", "{}", name], ["stats", "{}"], ["diff", "{}", str(local)]):
        a = run(*[url if x == "{}" else x for x in args])
        b = run(*[str(local) if x == "{}" else x for x in args])
        assert a.returncode == 0 and a.stdout.replace(url, "F") == b.stdout.replace(str(local), "F"), (args, a.stderr)
    for src, tag in ((url, "r"), (local, "l")):
        assert run("convert", src, tmp_path / f"{tag}.c", "--dtype", "BF16").returncode == 0
        assert run("quantize", src, tmp_path / f"{tag}.q", "--scheme", "int4-g32-sym").returncode == 0
        assert run("shard", src, tmp_path / f"{tag}.shards", "--max-size", "2KB").returncode == 0
    assert (tmp_path / "r.q").read_bytes() == (tmp_path / "l.q").read_bytes()
    assert (tmp_path / "r.c").read_bytes() == (tmp_path / "l.c").read_bytes()
    (served.root / "q.safetensors").write_bytes((tmp_path / "l.q").read_bytes())
    assert run("dequantize", f"{served.url}/q.safetensors", tmp_path / "r.d").returncode == 0
    assert run("dequantize", tmp_path / "l.q", tmp_path / "l.d").returncode == 0
    assert (tmp_path / "r.d").read_bytes() == (tmp_path / "l.d").read_bytes()
    for f in (tmp_path / "l.shards").iterdir():
        assert (tmp_path / "r.shards" / f.name).read_bytes() == f.read_bytes()


def test_https_is_verified(served, tmp_path):
    """A self-signed server is refused by default; trusted through $CURL_CA_BUNDLE it reads as
    over http."""
    with nginx(served.root, tls=True) as server:
        url = f"{server.url}/worked_example.safetensors"
        out = run("inspect", "--json", url, env={"CURL_CA_BUNDLE": ""})
        assert out.returncode == 1 and "certificate" in out.stderr.lower(), out.stderr
        a = run("inspect", "--json", url, env={"CURL_CA_BUNDLE": str(server.cert)})
        b = run("inspect", "--json", f"{served.url}/worked_example.safetensors")
        assert a.returncode == 0, a.stderr
        ja, jb = json.loads(a.stdout), json.loads(b.stdout)
        ja.pop("path"), jb.pop("path")
        assert ja == jb


def test_get_slice_of_a_url_reads_only_the_rows_asked_for():
    x = np.arange(1024 * 256, dtype=np.float32).reshape(1024, 256)  # 1 MiB in rows of 1 KiB
    data = tlio.save({"x": x})
    with fault_server({"x.safetensors": data}) as srv:
        with tlio.safe_open(f"{srv.url}/plain/x.safetensors", "numpy") as f:
            opened = len(srv.requests)
            s = f.get_slice("x")
            np.testing.assert_array_equal(s[600:602], x[600:602])
            np.testing.assert_array_equal(s[700, ::-2], x[700, ::-2])
            np.testing.assert_array_equal(s[-1:, 3:7], x[-1:, 3:7])
        ranges = [r for _, r, _, _ in srv.requests[opened:]]
    assert len(ranges) == 3, ranges
    sizes = [int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1 for r in ranges]
    assert sizes == [2 * 1024, 1024, 16], sizes  # two rows, one row, four values of one row
