"""tlio hash and tlio verify FILE [--sha256], and sha256= in Python's loaders, against hashlib and
sha256sum: digests of files, folders, pipes and odd names, the entries that cannot be hashed
named, and a wrong or malformed digest refused."""
import hashlib
import json
import os
import subprocess

import numpy as np
import pytest

import tlio
import tlio.numpy
from trust_helpers import EXAMPLE, MIXED, MODEL_FILES, error_lines, make_model, run, sha
from trust_helpers import keys, weights  # noqa: F401 (pytest fixtures)


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


def test_devices_are_refused_and_proc_files_read_whole():
    out = run("hash", "/dev/zero")
    assert out.returncode == 1 and "/dev/zero: is not a regular file" in out.stderr
    out = run("hash", "/proc/self/cmdline")  # its size says 0; its bytes are the command line
    assert out.returncode == 0 and not out.stdout.startswith(hashlib.sha256(b"").hexdigest())


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
