"""tlio hash, verify and sign, and their Python side, against independent references: hashlib
and sha256sum for digests, nginx as a Hub publishing X-Linked-Etag, and model_signing_ref.py
(model-signing v1.0 written from the format) for signatures: what one side signs the other
verifies, and both refuse the same tampered folders, naming the cause."""
import base64
import hashlib
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tlio
import tlio.numpy
import model_signing_ref as ref
from http_servers import nginx

# Absolute: some commands run in a test's folder.
DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data")).absolute()
CLI = os.path.abspath(os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio")))
EXAMPLE = DATA / "hf" / "worked_example.safetensors"
MIXED = DATA / "hf" / "mixed_all_dtypes.safetensors"
CURVES = ("P-256", "P-384", "P-521")
DEFAULT_IGNORES = sorted(ref.GIT_PATHS + ("model.sig",))


def run(*args, cwd=None, env=None, timeout=60, pass_fds=()):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
                          pass_fds=pass_fds)


def sha(data):
    return hashlib.sha256(data if isinstance(data, bytes) else pathlib.Path(data).read_bytes()).hexdigest()


def error_lines(out):
    return [line for line in out.stderr.splitlines() if line]


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """One key pair per curve, and another P-256 pair ("other") that signed nothing here:
    {name: (private path, public path, private PEM bytes)}."""
    tmp = tmp_path_factory.mktemp("keys")
    out = {}
    for name in CURVES + ("other",):
        priv, pub = tmp / f"{name}.pem", tmp / f"{name}.pub"
        pem, _ = ref.generate_key(priv, pub, "P-256" if name == "other" else name)
        out[name] = (priv, pub, pem)
    return out


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A 1 MiB safetensors file numpy can load whole (two tensors)."""
    path = tmp_path_factory.mktemp("weights") / "weights.safetensors"
    rng = np.random.default_rng(3)
    tlio.numpy.save_file({"w": rng.standard_normal((256, 1024), dtype=np.float32), "i": np.arange(100, dtype=np.int64)},
                         path)
    return path


def make_model(root, name="model"):
    """A tiny model folder: a safetensors file, a nested config and tokenizer, and git files at
    the top, which signatures leave out. Returns its path."""
    folder = root / name
    (folder / "sub" / "deeper").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(EXAMPLE.read_bytes())
    (folder / "sub" / "config.json").write_text('{"hidden": 4}\n')
    (folder / "sub" / "deeper" / "tokenizer.txt").write_text("a b c\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    return folder


MODEL_FILES = ["model.safetensors", "sub/config.json", "sub/deeper/tokenizer.txt"]


# ---------------------------------------------------------------------------------------
# tlio hash

def test_hash_of_a_file_and_a_folder_is_hashlibs_and_sha256sum_checks_it(tmp_path):
    """A folder is hashed recursively in path order (nested folders, an empty file, a space in
    a name; .git left out, .gitattributes kept), each line as sha256sum writes it."""
    folder = tmp_path / "m"
    (folder / "nested" / "deep").mkdir(parents=True)
    (folder / "nested" / "deep" / "w.bin").write_bytes(bytes(range(256)) * 40)
    (folder / "nested-z.txt").write_text("z")  # a plain string sort would put it first
    (folder / "empty").write_bytes(b"")
    (folder / "with space.txt").write_text("spaced\n")
    (folder / "model.safetensors").write_bytes(MIXED.read_bytes())
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "objects" / "ab").write_text("an object")
    (folder / ".gitattributes").write_text("*.bin binary\n")
    rels = [".gitattributes", "empty", "model.safetensors", "nested/deep/w.bin", "nested-z.txt", "with space.txt"]

    out = run("hash", "m", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{sha(folder / r)}  m/{r}" for r in rels]
    assert ".git/" not in out.stdout
    assert sha(b"") in out.stdout
    (tmp_path / "m.sha256").write_text(out.stdout)
    check = subprocess.run(["sha256sum", "-c", "--strict", "m.sha256"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.splitlines() == [f"m/{r}: OK" for r in rels]

    one = run("hash", folder / "model.safetensors")
    assert one.returncode == 0 and one.stdout == f"{sha(MIXED)}  {folder / 'model.safetensors'}\n"
    # Then sha256sum -c catches a change.
    (folder / "empty").write_bytes(b"!")
    check = subprocess.run(["sha256sum", "-c", "m.sha256"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 1 and "m/empty: FAILED" in check.stdout


def test_hash_of_a_folder_hashes_what_it_can_and_names_every_entry_it_cannot(tmp_path):
    """A FIFO (it would block), a dangling link and, when the test is not root, a folder that
    cannot be read: each named, on stderr and in --json, and every other file still hashed."""
    folder = tmp_path / "m"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.bin").write_bytes(b"a")
    (folder / "sub" / "b.bin").write_bytes(b"b")
    os.mkfifo(folder / "pipe")
    os.symlink(tmp_path / "nowhere", folder / "dangling")
    refused = {"m/pipe": "is not a regular file", "m/dangling": "is a symbolic link to something"}
    if os.geteuid() != 0:  # root reads every folder
        (folder / "locked").mkdir()
        (folder / "locked" / "c.bin").write_bytes(b"c")
        (folder / "locked").chmod(0)
        refused["m/locked"] = "cannot be read"
    try:
        out = run("hash", "m", cwd=tmp_path)
        js = run("hash", "m", "--json", cwd=tmp_path)
    finally:
        if (folder / "locked").exists():
            (folder / "locked").chmod(0o755)
    assert out.returncode == 1 and js.returncode == 1
    assert out.stdout.splitlines() == [f"{sha(b'a')}  m/a.bin", f"{sha(b'b')}  m/sub/b.bin"]
    lines = error_lines(out)
    assert len(lines) == len(refused)
    assert all(any(line.startswith(f"tlio: {p}: {why}") for line in lines) for p, why in refused.items())
    doc = json.loads(js.stdout)
    assert doc["ok"] is False
    failures = {f["path"]: f["error"]["message"] for f in doc["files"] if f["error"]}
    assert failures.keys() == refused.keys()
    assert all(why in failures[p] for p, why in refused.items())
    assert {f["path"]: f["sha256"] for f in doc["files"] if not f["error"]} == {"m/a.bin": sha(b"a"),
                                                                                 "m/sub/b.bin": sha(b"b")}


def test_names_with_a_backslash_or_a_newline_are_escaped_as_sha256sum_escapes_them(tmp_path):
    """sha256sum's own output over the same files is the oracle, and it reads tlio's back."""
    folder = tmp_path / "odd"
    folder.mkdir()
    names = ["back\\slash.bin", "new\nline.bin", "plain.bin"]
    for i, n in enumerate(names):
        (folder / n).write_bytes(b"x" * (i + 1))
    out = run("hash", "odd", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    theirs = subprocess.run(["sha256sum", *[f"odd/{n}" for n in names]], cwd=tmp_path, capture_output=True, text=True)
    assert theirs.returncode == 0
    assert out.stdout == theirs.stdout
    assert out.stdout.splitlines()[0] == f"\\{sha(b'x')}  odd/back\\\\slash.bin"
    assert out.stdout.splitlines()[1] == f"\\{sha(b'xx')}  odd/new\\nline.bin"
    (tmp_path / "odd.sha256").write_text(out.stdout)
    check = subprocess.run(["sha256sum", "-c", "--strict", "odd.sha256"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": OK") == 3


def test_hash_file_in_python_is_hashlibs(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    text = tmp_path / "not-safetensors.txt"
    text.write_bytes(os.urandom(3 << 20))  # several of the reader's pieces
    for path in (EXAMPLE, MIXED, empty, text):
        digest = tlio.hash_file(path)
        assert digest == sha(path) and tlio.hash_file(str(path)) == digest
    with pytest.raises(OSError) as e:
        tlio.hash_file(tmp_path / "absent")
    assert "absent" in str(e.value)


def test_hash_json_gives_path_size_and_digest(tmp_path):
    make_model(tmp_path)
    out = run("hash", "--json", "model", EXAMPLE, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["ok"] is True
    want = [f"model/{r}" for r in [".gitattributes"] + MODEL_FILES] + [str(EXAMPLE)]
    assert [f["path"] for f in doc["files"]] == want
    for f in doc["files"]:
        path = tmp_path / f["path"]
        assert set(f) == {"path", "size", "sha256", "checked_against", "error"}
        assert f["size"] == path.stat().st_size and f["sha256"] == sha(path)
        assert f["checked_against"] is None and f["error"] is None
    assert doc["files"][1]["sha256"] == sha(EXAMPLE)


def test_a_missing_file_fails_the_run_and_the_others_are_still_hashed(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"first")
    b.write_bytes(b"second")
    out = run("hash", a, tmp_path / "absent.bin", b)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [f"{sha(a)}  {a}", f"{sha(b)}  {b}"]
    assert error_lines(out) == [f"tlio: {tmp_path / 'absent.bin'}: cannot open: No such file or directory"]
    doc = json.loads(run("hash", "--json", a, tmp_path / "absent.bin", b).stdout)
    assert doc["ok"] is False
    assert [f["sha256"] for f in doc["files"]] == [sha(a), None, sha(b)]
    assert doc["files"][1]["size"] is None and "absent.bin" in doc["files"][1]["error"]["message"]
    assert doc["files"][0]["error"] is None and doc["files"][2]["error"] is None


def test_a_fifo_in_a_folder_is_refused_by_name_without_blocking(tmp_path, keys):
    """Opening a FIFO would wait for a writer forever: it is named and refused instead, by hash
    and by sign (the subprocess timeout would catch a hang)."""
    folder = make_model(tmp_path)
    os.mkfifo(folder / "sub" / "pipe")
    out = run("hash", folder, timeout=10)
    assert out.returncode == 1 and "pipe" not in out.stdout  # named, and the other files hashed
    assert f"{sha(folder / 'model.safetensors')}  {folder}/model.safetensors" in out.stdout.splitlines()
    assert error_lines(out) == [f"tlio: {folder}/sub/pipe: is not a regular file (a FIFO, socket or device)"]
    doc = json.loads(run("hash", "--json", folder, timeout=10).stdout)
    assert doc["ok"] is False and "sub/pipe" in doc["files"][0]["error"]["message"]
    signed = run("sign", folder, "--key", keys["P-256"][0], timeout=10)
    assert signed.returncode == 1 and "sub/pipe" in signed.stderr and "FIFO" in signed.stderr
    assert not (folder / "model.sig").exists()


@pytest.mark.parametrize("side", ["cli", "python"])
def test_a_pipe_given_as_a_path_is_hashed_whole_or_refused(side):
    """`tlio hash <(cmd)`, as `sha256sum <(cmd)` is used: its bytes' digest, or an error; never
    the digest of nothing (a pipe's stat size is 0) with exit 0."""
    data = b"bytes through a pipe\n" * 100
    r, w = os.pipe()
    try:
        os.write(w, data)  # fits in the pipe's buffer: no writer needed while tlio reads
        os.close(w)
        path = f"/dev/fd/{r}"
        if side == "cli":
            out = run("hash", path, timeout=10, pass_fds=(r,))
            assert sha(b"") not in out.stdout, f"the empty string's digest for {len(data)} bytes: {out.stdout}"
            if out.returncode == 0:
                assert out.stdout == f"{sha(data)}  {path}\n"
            else:
                assert out.returncode == 1 and out.stdout == "" and path in out.stderr
        else:
            try:
                digest = tlio.hash_file(path)
            except (OSError, ValueError) as e:
                assert path in str(e)
            else:
                assert digest == sha(data), f"tlio.hash_file of {len(data)} bytes through a pipe"
    finally:
        os.close(r)


# ---------------------------------------------------------------------------------------
# a Hub's X-Linked-Etag

@pytest.fixture(scope="module")
def hub(tmp_path_factory, weights):
    """nginx as the Hub: /org/repo/resolve/main/{model,changed}.safetensors answered with an
    X-Linked-Etag (right / wrong, as if the file changed on the server after it was published),
    /r/{good,bad}.safetensors the same as a 302 to /cdn/ carrying the header, /plain/ without,
    /etag/{good,bad,weak}.safetensors with an ETag of 64 hex digits (right, wrong, weak)."""
    root = tmp_path_factory.mktemp("hub")
    resolve = root / "org" / "repo" / "resolve" / "main"
    resolve.mkdir(parents=True)
    for d in ("cdn", "plain", "etag"):
        (root / d).mkdir()
    data = weights.read_bytes()
    for path in (resolve / "model.safetensors", resolve / "changed.safetensors", root / "cdn" / "good.safetensors",
                 root / "cdn" / "bad.safetensors", root / "plain" / "model.safetensors",
                 root / "etag" / "good.safetensors", root / "etag" / "bad.safetensors", root / "etag" / "weak.safetensors"):
        path.write_bytes(data)
    good, wrong = sha(data), sha(EXAMPLE)
    extra = f"""
    location = /org/repo/resolve/main/model.safetensors {{ add_header X-Linked-Etag '"{good}"' always; }}
    location = /org/repo/resolve/main/changed.safetensors {{ add_header X-Linked-Etag '"{wrong}"' always; }}
    location = /r/good.safetensors {{ add_header X-Linked-Etag '"{good}"' always; return 302 /cdn/good.safetensors; }}
    location = /r/bad.safetensors {{ add_header X-Linked-Etag '"{wrong}"' always; return 302 /cdn/bad.safetensors; }}
    location = /etag/good.safetensors {{ etag off; add_header ETag '"{good}"' always; }}
    location = /etag/bad.safetensors {{ etag off; add_header ETag '"{wrong}"' always; }}
    location = /etag/weak.safetensors {{ etag off; add_header ETag 'W/"{wrong}"' always; }}
"""
    home = tmp_path_factory.mktemp("hf-home")
    with nginx(root, extra=extra) as server:
        server.good, server.wrong, server.size = good, wrong, len(data)
        server.env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(home)}
        for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HF_TOKEN_PATH"):
            server.env.pop(name, None)
        yield server


def hub_urls(hub, good):
    name = "model" if good else "changed"
    cdn = "good" if good else "bad"
    return [f"{hub.url}/org/repo/resolve/main/{name}.safetensors", f"{hub.url}/r/{cdn}.safetensors",
            f"hf://org/repo/{name}.safetensors"]


@pytest.fixture
def hub_env(hub, monkeypatch):
    """The hub, with this process's environment pointing hf:// at it (for Python's calls)."""
    for name in ("HF_ENDPOINT", "HF_HOME"):
        monkeypatch.setenv(name, hub.env[name])
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HF_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    return hub


def test_hash_and_verify_a_url_check_its_x_linked_etag(hub_env):
    """Directly, through the Hub's redirect to its CDN, and through hf://."""
    hub = hub_env
    for url in hub_urls(hub, good=True):
        out = run("hash", url, env=hub.env)
        assert out.returncode == 0, (url, out.stderr)
        assert out.stdout == f"{hub.good}  {url}\n"
        doc = json.loads(run("hash", "--json", url, env=hub.env).stdout)
        assert doc["ok"] is True and doc["files"][0]["checked_against"] == "X-Linked-Etag", url
        assert doc["files"][0]["sha256"] == hub.good and doc["files"][0]["size"] == hub.size
        out = run("verify", url, env=hub.env)
        assert out.returncode == 0, (url, out.stderr)
        assert out.stdout.endswith(f": OK (sha256 {hub.good}, matches its X-Linked-Etag)\n"), out.stdout
        res = json.loads(run("verify", "--json", url, env=hub.env).stdout)["results"][0]
        assert res["ok"] is True and res["kind"] == "file"
        assert res["checked_against"] == "X-Linked-Etag" and res["sha256"] == hub.good
        assert run("verify", url, "--sha256", hub.good.upper(), env=hub.env).returncode == 0
        out = run("verify", url, "--sha256", hub.wrong, env=hub.env)
        assert out.returncode == 1 and f"not the expected {hub.wrong}" in out.stderr
        assert tlio.hash_file(url) == hub.good
        assert tlio.load_file(url, sha256=hub.good)["i"].tolist() == list(range(100))
    assert any(line.startswith("302 ") for line in hub.log.read_text().splitlines())  # the redirect was taken
    # A strong ETag of 64 hex digits is taken as the SHA-256 too; a weak one is not.
    etag = f"{hub.url}/etag/good.safetensors"
    doc = json.loads(run("hash", "--json", etag, env=hub.env).stdout)
    assert doc["ok"] is True and doc["files"][0]["checked_against"] == "ETag"
    assert run("verify", etag, env=hub.env).stdout.endswith(f": OK (sha256 {hub.good}, matches its ETag)\n")
    out = run("hash", f"{hub.url}/etag/bad.safetensors", env=hub.env)
    assert out.returncode == 1 and f"but ETag says {hub.wrong}" in out.stderr
    doc = json.loads(run("hash", "--json", f"{hub.url}/etag/weak.safetensors", env=hub.env).stdout)
    assert doc["ok"] is True and doc["files"][0]["checked_against"] is None
    # A server that publishes nothing: hashed, checked against nothing.
    plain = f"{hub.url}/plain/model.safetensors"
    doc = json.loads(run("hash", "--json", plain, env=hub.env).stdout)
    assert doc["files"][0]["sha256"] == hub.good and doc["files"][0]["checked_against"] is None
    out = run("verify", plain, env=hub.env)
    assert out.returncode == 0 and out.stdout.endswith(f": OK (sha256 {hub.good})\n")


def test_a_wrong_x_linked_etag_fails_hash_and_verify_naming_both_digests(hub_env):
    hub = hub_env
    for url in hub_urls(hub, good=False):
        for cmd in ("hash", "verify"):
            out = run(cmd, url, env=hub.env)
            assert out.returncode == 1, (cmd, url, out.stdout)
            assert "OK" not in out.stdout and hub.good not in out.stdout
            assert f"its bytes have SHA-256 {hub.good}, but X-Linked-Etag says {hub.wrong}" in out.stderr, out.stderr
        doc = json.loads(run("hash", "--json", url, env=hub.env).stdout)
        assert doc["ok"] is False and doc["files"][0]["sha256"] is None
        assert hub.wrong in doc["files"][0]["error"]["message"]
        # the expected digest given matches the bytes, but the server's does not: still refused
        assert run("verify", url, "--sha256", hub.good, env=hub.env).returncode == 1
        with pytest.raises(tlio.VerificationError) as e:
            tlio.hash_file(url)
        assert hub.good in str(e.value) and hub.wrong in str(e.value) and "X-Linked-Etag" in str(e.value)


def test_a_cached_hub_file_is_checked_against_its_blob_name(tmp_path, monkeypatch):
    """The Hugging Face cache names an LFS blob by its SHA-256: a blob whose bytes changed is
    caught without asking the Hub."""
    home = tmp_path / "home"
    repo = home / "hub" / "models--org--cached"
    commit = "c" * 40
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    good_blob = repo / "blobs" / sha(EXAMPLE)
    good_blob.write_bytes(EXAMPLE.read_bytes())
    bad_blob = repo / "blobs" / sha(MIXED)
    bad_blob.write_bytes(EXAMPLE.read_bytes())  # named after another file's digest
    (repo / "snapshots" / commit / "good.safetensors").symlink_to(good_blob)
    (repo / "snapshots" / commit / "bad.safetensors").symlink_to(bad_blob)
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    doc = json.loads(run("hash", "--json", "hf://org/cached/good.safetensors", env=env).stdout)
    assert doc["ok"] is True and doc["files"][0]["sha256"] == sha(EXAMPLE)
    assert doc["files"][0]["checked_against"] == "the Hugging Face cache's blob name"
    out = run("hash", "hf://org/cached/bad.safetensors", env=env)
    assert out.returncode == 1 and sha(MIXED) in out.stderr and sha(EXAMPLE) in out.stderr
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(tlio.VerificationError):
        tlio.hash_file("hf://org/cached/bad.safetensors")


# ---------------------------------------------------------------------------------------
# tlio verify FILE [--sha256]

def test_verify_a_file_against_a_given_sha256(tmp_path):
    good = sha(EXAMPLE)
    out = run("verify", EXAMPLE, "--sha256", good)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{EXAMPLE}: OK (sha256 {good})\n"
    assert run("verify", EXAMPLE, "--sha256", good.upper()).returncode == 0
    assert run("verify", EXAMPLE).stdout == f"{EXAMPLE}: OK (sha256 {good})\n"  # no digest given: validate + hash
    wrong = sha(MIXED)
    out = run("verify", EXAMPLE, "--sha256", wrong)
    assert out.returncode == 1 and out.stdout == ""
    assert error_lines(out) == [f"tlio: {EXAMPLE}: its bytes have SHA-256 {good}, not the expected {wrong}"]
    res = json.loads(run("verify", "--json", EXAMPLE, "--sha256", wrong).stdout)
    assert res["ok"] is False and res["results"][0]["sha256"] is None and wrong in res["results"][0]["error"]["message"]
    for bad in ("abc", good[:-1], good + "0", "g" + good[1:], " " + good[1:]):
        out = run("verify", EXAMPLE, "--sha256", bad)
        assert out.returncode == 2, bad
        assert "64 hexadecimal digits" in out.stderr
    assert run("verify", EXAMPLE, MIXED, "--sha256", good).returncode == 2  # one PATH only


def test_verify_fails_a_structurally_invalid_file_with_validates_error(tmp_path):
    """A truncated copy fails verify with validate's own message, with or without --sha256
    (even one that matches its bytes)."""
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(MIXED.read_bytes()[:-10])
    validate = run("validate", cut)
    assert validate.returncode == 1 and validate.stderr
    for extra in ((), ("--sha256", sha(cut))):
        out = run("verify", cut, *extra)
        assert out.returncode == 1 and out.stdout == ""
        assert validate.stderr.strip() in out.stderr, (validate.stderr, out.stderr)
    res = json.loads(run("verify", "--json", cut).stdout)["results"][0]
    assert res["ok"] is False and res["sha256"] is None and "rule" in res["error"]


# ---------------------------------------------------------------------------------------
# sha256= in Python

def test_python_loaders_check_sha256_before_handing_out_tensors(weights):
    import tlio.torch
    import torch

    good, wrong = sha(weights), sha(EXAMPLE)
    want = tlio.load_file(weights)
    loaders = {
        "tlio.load_file": lambda s: tlio.load_file(weights, sha256=s),
        "tlio.numpy.load_file": lambda s: tlio.numpy.load_file(weights, sha256=s),
        "tlio.torch.load_file": lambda s: tlio.torch.load_file(weights, sha256=s),
        "tlio.safe_open": lambda s: tlio.safe_open(weights, "np", sha256=s),
    }
    for name, load in loaders.items():
        for digest in (good, good.upper()):
            got = load(digest)
            if name == "tlio.safe_open":
                with got as f:
                    assert f.keys() == sorted(want) and np.array_equal(f.get_tensor("w"), want["w"])
            elif name == "tlio.torch.load_file":
                assert set(got) == set(want) and isinstance(got["w"], torch.Tensor)
                assert np.array_equal(got["w"].numpy(), want["w"])
            else:
                assert set(got) == set(want) and np.array_equal(got["w"], want["w"])
        with pytest.raises(tlio.VerificationError) as e:
            load(wrong)  # safe_open: on construction, before any get_tensor
        assert isinstance(e.value, ValueError)
        assert good in str(e.value) and wrong in str(e.value), name
        for bad in ("xyz", good[:-1], "z" * 64):
            with pytest.raises(ValueError) as e:
                load(bad)
            assert not isinstance(e.value, tlio.VerificationError), (name, bad)
        with pytest.raises(TypeError):
            load(bytes.fromhex(good))


# ---------------------------------------------------------------------------------------
# model signatures: tlio and the reference agree

@pytest.mark.parametrize("curve", CURVES)
def test_tlio_signs_what_the_reference_verifies(tmp_path, keys, curve):
    """The bundle is model-signing's, to the byte layout for these ASCII names: compact JSON,
    the statement indented by 2, resources in path order, the git paths and model.sig recorded
    as ignored."""
    priv, pub, _ = keys[curve]
    folder = make_model(tmp_path)
    out = run("sign", folder, "--key", priv)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{folder}: signed ({folder}/model.sig)\n"
    sig = folder / "model.sig"
    assert ref.verify_folder(folder, sig, pub) == []
    assert ref.verify_folder(folder, sig, keys["other"][1]) != []  # (the reference can fail)

    bundle = ref.load_bundle(sig)
    assert sig.read_text() == ref.bundle_json(bundle)
    assert list(bundle) == ["mediaType", "verificationMaterial", "dsseEnvelope"]
    assert bundle["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert bundle["verificationMaterial"] == {"publicKey": {"hint": ref.key_hint(pub)}, "tlogEntries": []}
    env = bundle["dsseEnvelope"]
    assert env["payloadType"] == "application/vnd.in-toto+json"
    assert len(env["signatures"]) == 1 and env["signatures"][0]["keyid"] == ""
    statement = ref.statement_of(bundle)
    assert base64.b64decode(env["payload"]) == ref.statement_bytes(statement)
    assert statement == ref.build_statement("model", {r: sha(folder / r) for r in MODEL_FILES},
                                            ignore_paths=DEFAULT_IGNORES)
    assert statement["subject"][0]["name"] == "model"
    assert statement["predicate"]["serialization"] == {"method": "files", "hash_type": "sha256",
                                                       "allow_symlinks": False, "ignore_paths": DEFAULT_IGNORES}
    assert [r["name"] for r in statement["predicate"]["resources"]] == MODEL_FILES

    # tlio accepts its own
    out = run("verify", folder, "--key", pub)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{folder}: OK (signature: 3 files)\n"


def test_names_past_ascii_are_escaped_as_model_signing_writes_them(tmp_path, keys):
    """A name with an accent and one with an emoji: the statement has them as \\u escapes (a
    surrogate pair for the emoji), byte for byte what the reference writes; a name that is not
    UTF-8 cannot be listed in JSON and is refused by name, nothing written."""
    priv, pub, _ = keys["P-256"]
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "café.txt").write_text("a")
    (folder / "\U0001F600.bin").write_text("b")
    assert run("sign", folder, "--key", priv).returncode == 0
    bundle = ref.load_bundle(folder / "model.sig")
    payload = base64.b64decode(bundle["dsseEnvelope"]["payload"])
    assert b"caf\\u00e9.txt" in payload and b"\\ud83d\\ude00.bin" in payload
    assert payload == ref.statement_bytes(ref.statement_of(bundle))
    assert ref.verify_folder(folder, folder / "model.sig", pub) == []
    assert run("verify", folder, "--key", pub).returncode == 0

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / os.fsdecode(b"x\xff.bin")).write_text("c")
    out = subprocess.run([CLI, "sign", str(bad), "--key", str(priv)], capture_output=True, timeout=60)
    assert out.returncode == 1 and b"x\xff.bin: its name is not UTF-8" in out.stderr
    assert not (bad / "model.sig").exists()


@pytest.mark.parametrize("curve", CURVES)
def test_tlio_verifies_what_the_reference_signs(tmp_path, keys, curve):
    priv, pub, _ = keys[curve]
    folder = make_model(tmp_path)
    ref.sign_folder(folder, priv, folder / "model.sig")
    out = run("verify", folder, "--key", pub)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{folder}: OK (signature: 3 files)\n"
    doc = json.loads(run("verify", "--json", folder, "--key", pub).stdout)
    assert doc == {"ok": True, "results": [{"path": str(folder), "kind": "signature", "ok": True, "sha256": None,
                                            "checked_against": None, "problems": [], "error": None}]}
    assert tlio.verify(folder, key=pub) == {"files": 3, "key_hint": ref.key_hint(pub)}
    # the hint is optional (model-signing 1.0 bundles carry none): the signature decides
    bundle = ref.load_bundle(folder / "model.sig")
    del bundle["verificationMaterial"]["publicKey"]["hint"]
    ref.write_bundle(bundle, folder / "model.sig")
    assert run("verify", folder, "--key", pub).returncode == 0
    assert run("verify", folder, "--key", keys["other"][1]).returncode == 1


def test_a_one_file_model_signed_either_way(tmp_path, keys):
    """A model that is a single file is the resource "."; its signature is named."""
    priv, pub, _ = keys["P-384"]
    model = tmp_path / "model.safetensors"
    model.write_bytes(MIXED.read_bytes())
    ref.sign_folder(model, priv, tmp_path / "ref.sig")
    out = run("verify", model, "--key", pub, "--signature", tmp_path / "ref.sig")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{model}: OK (signature: 1 file)\n"
    assert run("sign", model, "--key", priv, "--signature", tmp_path / "tlio.sig").returncode == 0
    assert ref.verify_folder(model, tmp_path / "tlio.sig", pub) == []
    statement = ref.statement_of(ref.load_bundle(tmp_path / "tlio.sig"))
    assert statement["predicate"]["resources"] == [{"algorithm": "sha256", "digest": sha(MIXED), "name": "."}]
    assert statement["subject"][0]["name"] == "model.safetensors"
    model.write_bytes(MIXED.read_bytes()[:-1] + b"\x01")
    out = run("verify", model, "--key", pub, "--signature", tmp_path / "tlio.sig")
    assert out.returncode == 1 and f"its SHA-256 is {sha(model)}, the signature says {sha(MIXED)}" in out.stderr
    assert ref.verify_folder(model, tmp_path / "tlio.sig", pub) == ["digest mismatch: ."]


# ---------------------------------------------------------------------------------------
# refusals, each naming its cause, by tlio and by the reference

def _flip_a_byte(folder, keys):
    path = folder / "model.safetensors"
    old = sha(path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    return keys["P-256"][1], [["model.safetensors: ", f"its SHA-256 is {sha(path)}", f"the signature says {old}"]], \
        ["digest mismatch: model.safetensors"]


def _add_a_file(folder, keys):
    (folder / "sub" / "extra.bin").write_bytes(b"new")
    return keys["P-256"][1], [["sub/extra.bin: ", "not in the signature"]], ["extra file: sub/extra.bin"]


def _remove_a_file(folder, keys):
    (folder / "sub" / "config.json").unlink()
    return keys["P-256"][1], [["sub/config.json: ", "missing"]], ["missing file: sub/config.json"]


def _file_replaced_by_an_empty_folder(folder, keys):
    (folder / "sub" / "config.json").unlink()
    (folder / "sub" / "config.json").mkdir()
    return keys["P-256"][1], [["sub/config.json: ", "missing"]], ["missing file: sub/config.json"]


def _wrong_key(folder, keys):
    hint, other = ref.key_hint(keys["P-256"][1]), ref.key_hint(keys["other"][1])
    return keys["other"][1], [["key hint", hint, other], ["signature does not verify"]], ["hint", "signature"]


def _changed_hint(folder, keys):
    bundle = ref.load_bundle(folder / "model.sig")
    bundle["verificationMaterial"]["publicKey"]["hint"] = "0" * 64
    ref.write_bundle(bundle, folder / "model.sig")
    return keys["P-256"][1], [["key hint", "0" * 64, ref.key_hint(keys["P-256"][1])]], ["hint"]


def _bad_root_digest_validly_signed(folder, keys):
    bundle = ref.load_bundle(folder / "model.sig")
    statement = ref.statement_of(bundle)
    real = statement["subject"][0]["digest"]["sha256"]
    statement["subject"][0]["digest"]["sha256"] = "f" * 64
    ref.write_bundle(ref.resign(bundle, keys["P-256"][0], statement), folder / "model.sig")
    return keys["P-256"][1], [["subject's digest", "f" * 64, real]], ["root digest"]


def _statement_changed_without_resigning(folder, keys):
    """The file changed and the statement says so, consistently, but the old signature is kept."""
    (folder / "sub" / "config.json").write_text('{"hidden": 5}\n')
    bundle = ref.load_bundle(folder / "model.sig")
    statement = ref.statement_of(bundle)
    for r in statement["predicate"]["resources"]:
        if r["name"] == "sub/config.json":
            r["digest"] = sha(folder / "sub" / "config.json")
    statement["subject"][0]["digest"]["sha256"] = ref.root_digest(statement["predicate"]["resources"])
    bundle["dsseEnvelope"]["payload"] = base64.b64encode(ref.statement_bytes(statement)).decode()
    ref.write_bundle(bundle, folder / "model.sig")
    return keys["P-256"][1], [["signature does not verify"]], ["signature"]


TAMPERINGS = [_flip_a_byte, _add_a_file, _remove_a_file, _file_replaced_by_an_empty_folder, _wrong_key, _changed_hint, _bad_root_digest_validly_signed,
              _statement_changed_without_resigning]


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=[t.__name__.strip("_") for t in TAMPERINGS])
def test_a_tampered_model_is_refused_naming_the_cause(tmp_path, keys, tamper):
    """Exactly the expected problems, each naming its file or digests, on stderr (one line
    each), in --json and in VerificationError.problems; the reference finds the same kinds."""
    folder = make_model(tmp_path)
    assert run("sign", folder, "--key", keys["P-256"][0]).returncode == 0
    pub, wanted, ref_kinds = tamper(folder, keys)

    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub)
    problems = e.value.problems
    assert len(problems) == len(wanted), problems
    for problem, parts in zip(problems, wanted):
        for part in parts:
            assert part in problem, (part, problem)
        assert problem in str(e.value)
    if wanted[0][0].endswith(": "):  # a file's problem starts with its name
        assert problems[0].startswith(wanted[0][0])

    out = run("verify", folder, "--key", pub)
    assert out.returncode == 1 and out.stdout == ""
    assert error_lines(out) == [f"tlio: {folder}: {p}" for p in problems]
    doc = json.loads(run("verify", "--json", folder, "--key", pub).stdout)
    assert doc["ok"] is False and doc["results"][0]["ok"] is False
    assert doc["results"][0]["problems"] == problems and doc["results"][0]["error"] is None

    found = ref.verify_folder(folder, folder / "model.sig", pub)
    assert [p if p.startswith(("digest", "extra", "missing")) else p.split(":")[0] for p in found] == ref_kinds, found


# ---------------------------------------------------------------------------------------
# what is left out, and where the signature is

def test_ignored_paths_may_change_without_failing_verify(tmp_path, keys):
    priv, pub, _ = keys["P-521"]
    folder = make_model(tmp_path)
    (folder / "notes.txt").write_text("draft")
    (folder / "logs").mkdir()
    (folder / "logs" / "run1.txt").write_text("loss 3")
    assert tlio.sign(folder, key=priv, ignore_paths=["notes.txt", "logs/"]) == f"{folder}/model.sig"
    statement = ref.statement_of(ref.load_bundle(folder / "model.sig"))
    assert statement["predicate"]["serialization"]["ignore_paths"] == sorted(DEFAULT_IGNORES + ["logs", "notes.txt"])
    assert [r["name"] for r in statement["predicate"]["resources"]] == MODEL_FILES
    (folder / "notes.txt").write_text("rewritten")
    (folder / "logs" / "run2.txt").write_text("loss 2")
    (folder / ".gitattributes").write_text("changed\n")
    assert tlio.verify(folder, key=pub)["files"] == 3
    assert run("verify", folder, "--key", pub).returncode == 0
    assert ref.verify_folder(folder, folder / "model.sig", pub) == []
    (folder / "sub" / "config.json").write_text("{}")  # not ignored: still caught
    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub)
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith("sub/config.json: ")

    # --ignore-paths on verify: a path the signature did not leave out
    other = make_model(tmp_path, "other")
    ref.sign_folder(other, priv, other / "model.sig")
    (other / "cache").mkdir()
    (other / "cache" / "x.bin").write_bytes(b"x")
    out = run("verify", other, "--key", pub)
    assert out.returncode == 1 and error_lines(out) == [f"tlio: {other}: cache/x.bin: not in the signature (a file added)"]
    assert run("verify", other, "--key", pub, "--ignore-paths", "cache").returncode == 0
    assert tlio.verify(other, key=pub, ignore_paths=["cache"])["files"] == 3


def test_an_absolute_ignore_path_inside_the_folder_is_left_out(tmp_path, keys):
    """As model-signing (and the reference) take it: FOLDER/notes.txt given as an absolute path
    is that file, left out and recorded, not dropped without a word."""
    priv, pub, _ = keys["P-256"]
    folder = make_model(tmp_path)
    (folder / "notes.txt").write_text("draft")
    theirs = ref.statement_of(ref.sign_folder(folder, priv, tmp_path / "ref.sig", ignore_paths=[folder / "notes.txt"]))
    out = run("sign", folder, "--key", priv, "--ignore-paths", folder / "notes.txt")
    assert out.returncode == 0, out.stderr
    ours = ref.statement_of(ref.load_bundle(folder / "model.sig"))
    assert [r["name"] for r in theirs["predicate"]["resources"]] == MODEL_FILES
    assert [r["name"] for r in ours["predicate"]["resources"]] == MODEL_FILES
    assert ours["predicate"]["serialization"]["ignore_paths"] == sorted(DEFAULT_IGNORES + ["notes.txt"])


def test_a_signature_kept_outside_the_folder_lists_every_file(tmp_path, keys):
    """Then nothing of the folder is the signature: even a file named model.sig is signed."""
    priv, pub, _ = keys["P-256"]
    folder = make_model(tmp_path)
    (folder / "model.sig").write_text("an old signature, part of the model now")
    outside = tmp_path / "sigs" / "model.bundle"
    outside.parent.mkdir()
    out = run("sign", folder, "--key", priv, "--signature", outside)
    assert out.returncode == 0 and out.stdout == f"{folder}: signed ({outside})\n"
    statement = ref.statement_of(ref.load_bundle(outside))
    assert [r["name"] for r in statement["predicate"]["resources"]] == ["model.safetensors", "model.sig"] + MODEL_FILES[1:]
    assert statement["predicate"]["serialization"]["ignore_paths"] == sorted(ref.GIT_PATHS)
    assert ref.verify_folder(folder, outside, pub) == []
    assert run("verify", folder, "--key", pub, "--signature", outside).stdout == f"{folder}: OK (signature: 4 files)\n"
    assert tlio.verify(folder, key=pub, signature=outside)["files"] == 4
    (folder / "model.sig").write_text("changed")
    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub, signature=outside)
    assert [p.split(":")[0] for p in e.value.problems] == ["model.sig"]
    # the reference's signature outside the folder: the same statement
    ref.sign_folder(folder, priv, tmp_path / "sigs" / "ref.bundle")
    assert run("verify", folder, "--key", pub, "--signature", tmp_path / "sigs" / "ref.bundle").returncode == 0


def test_verify_refuses_mixed_up_arguments_before_reading_anything(tmp_path, keys):
    folder = make_model(tmp_path)
    out = run("verify", folder)
    assert out.returncode == 2 and "--key" in out.stderr and str(folder) in out.stderr and out.stdout == ""
    out = run("verify", folder / "model.safetensors", "--key", keys["P-256"][1])
    assert out.returncode == 2 and "--signature" in out.stderr
    out = run("verify", folder, "--key", keys["P-256"][1], "--sha256", sha(EXAMPLE))
    assert out.returncode == 2 and "--sha256" in out.stderr
    out = run("verify", folder, "--key", keys["P-256"][1])  # no model.sig there
    assert out.returncode == 1 and f"{folder}/model.sig" in out.stderr
    with pytest.raises(OSError):
        tlio.verify(folder, key=keys["P-256"][1])


# ---------------------------------------------------------------------------------------
# secrets

def test_the_private_key_never_appears_in_any_output(tmp_path, keys):
    """Not on success, nor when the private key is given where a public one goes (or the
    reverse), in text or JSON, from the CLI or in Python's exceptions."""
    priv, pub, pem = keys["P-256"]
    text = pem.decode()
    body = [line for line in text.splitlines() if not line.startswith("-----") and len(line) >= 16]
    scalar = format(ref._load_private(pem).private_numbers().private_value, "x")
    secrets = [text, *body, scalar]
    assert len(body) >= 2

    def absent(s):
        for secret in secrets:
            assert secret not in s

    folder = make_model(tmp_path)
    outs = [run("sign", folder, "--key", priv), run("sign", "--json", folder, "--key", priv),
            run("verify", folder, "--key", pub), run("verify", "--json", folder, "--key", pub),
            run("verify", folder, "--key", priv), run("verify", "--json", folder, "--key", priv),
            run("sign", folder, "--key", pub), run("sign", "--json", folder, "--key", pub),
            run("hash", priv), run("hash", "--json", priv), run("verify", priv),
            run("verify", priv, "--key", priv, "--signature", folder / "model.sig")]
    assert outs[0].returncode == 0 and outs[2].returncode == 0
    assert outs[4].returncode == 0  # a private key verifies by its public half
    assert outs[6].returncode == 1 and "private key" in outs[6].stderr
    for out in outs:
        absent(out.stdout)
        absent(out.stderr)
    absent((folder / "model.sig").read_text())
    for call in (lambda: tlio.verify(folder, key=priv, signature=priv), lambda: tlio.sign(folder, key=pub),
                 lambda: tlio.load_file(priv)):
        with pytest.raises(Exception) as e:
            call()
        absent(str(e.value))
        absent(repr(e.value))


def test_a_link_or_fifo_put_in_a_signed_folder_is_a_verification_problem(tmp_path, keys):
    """Tampering that adds what is not a regular file fails as any tampering does (a
    VerificationError naming it), not as an error of another kind; a name that is not UTF-8
    reaches Python as os.fsdecode spells it."""
    priv, pub, _ = keys["P-256"]
    folder = make_model(tmp_path)
    assert run("sign", folder, "--key", priv).returncode == 0
    os.mkfifo(folder / "sub" / "fifo")
    (folder / "link").symlink_to("model.safetensors")
    (folder / os.fsdecode(b"odd\xff")).write_text("x")
    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub)
    problems = e.value.problems
    assert any(p.startswith("sub/fifo: is not a regular file") for p in problems), problems
    assert any(p.startswith("link: is a symbolic link") for p in problems), problems
    assert os.fsdecode(b"odd\xff") + ": not in the signature (a file added)" in problems


def test_devices_are_refused_and_proc_files_read_whole():
    out = run("hash", "/dev/zero")
    assert out.returncode == 1 and "/dev/zero: is not a regular file" in out.stderr
    out = run("hash", "/proc/self/cmdline")  # its size says 0; its bytes are the command line
    assert out.returncode == 0 and not out.stdout.startswith(hashlib.sha256(b"").hexdigest())
