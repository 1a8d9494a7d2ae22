"""Writes that never harm what is not theirs: outputs that are not regular files are refused
untouched, links are followed, signals clean up (CLI: exit 128+signal; Python: KeyboardInterrupt),
a mapped input that shrinks is named, and a new set of shards replaces the old one whole.

Every node is made here, in a temporary folder: no system device is ever an output."""
import os
import pathlib
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tlio
import tlio.numpy
import tlio.torch

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def run(*args, **kw):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, **kw)


def temporaries(folder):
    return sorted(p.name for p in pathlib.Path(folder).iterdir() if ".tlio-tmp-" in p.name)


@pytest.fixture()
def tiny(tmp_path):
    path = tmp_path / "tiny.safetensors"
    tlio.numpy.save_file({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, path)
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """256 MiB of F32 in 16 tensors: long enough to convert that a signal lands mid-write."""
    path = tmp_path_factory.mktemp("big") / "big.safetensors"
    rng = np.random.default_rng(0)
    block = rng.standard_normal((1024, 4096), dtype=np.float32)
    tlio.numpy.save_file({f"layers.{i}.weight": block for i in range(16)}, path)
    return path


def nodes(folder):
    """FIFO, socket and (as root) a character and a block device, made in `folder`."""
    made = {}
    os.mkfifo(folder / "fifo")
    made["fifo"] = "is a FIFO, not a file"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(folder / "sock"))
    made["sock"] = "is a socket, not a file"
    try:
        os.mknod(folder / "chr", stat.S_IFCHR | 0o666, os.makedev(1, 7))  # as /dev/full's numbers
        os.mknod(folder / "blk", stat.S_IFBLK | 0o600, os.makedev(7, 0))
        made["chr"] = "is a character device, not a file"
        made["blk"] = "is a block device, not a file"
    except PermissionError:
        pass  # not root: the FIFO and socket cases still run
    return s, made


def test_cli_refuses_nodes_untouched(tmp_path, tiny):
    sock, made = nodes(tmp_path)
    os.mkdir(tmp_path / "dir")
    made["dir"] = "is a directory, not a file"
    for name, what in made.items():
        before = os.lstat(tmp_path / name)
        for args in (["convert", tiny, tmp_path / name], ["convert", tiny, tmp_path / name, "--dtype", "bf16"],
                     ["quantize", tiny, tmp_path / name, "--scheme", "int4-g32-sym", "--include", "w"]):
            r = run(*args, timeout=30)  # a FIFO must not make it wait for a reader
            assert r.returncode == 1, (name, r.stdout, r.stderr)
            assert f"{tmp_path / name}: {what}" in r.stderr, r.stderr
            after = os.lstat(tmp_path / name)
            assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert temporaries(tmp_path) == []
    sock.close()


def test_cli_refuses_nodes_for_every_writer(tmp_path, tiny):
    os.mkfifo(tmp_path / "fifo")
    model = tmp_path / "model"
    assert run("shard", tiny, model, "--max-size", "1GB").returncode == 0
    (tmp_path / "text.txt").write_text("abc " * 100)
    import torch
    torch.save({"w": torch.ones(3)}, tmp_path / "ckpt.pt")
    cases = [
        ["dequantize", tiny, tmp_path / "fifo"],
        ["merge", model, tmp_path / "fifo"],
        ["import", tmp_path / "ckpt.pt", tmp_path / "fifo"],
    ]
    for args in cases:
        r = run(*args, timeout=30)
        assert r.returncode == 1 and "is a FIFO, not a file" in r.stderr, (args, r.stderr)
    # Folder outputs: a FIFO where a file of the folder goes.
    os.mkdir(tmp_path / "out")
    os.mkfifo(tmp_path / "out" / "model.safetensors")
    for args in (["shard", tiny, tmp_path / "out", "--max-size", "1GB"], ["bigram", "train", tmp_path / "text.txt", tmp_path / "out"]):
        r = run(*args, timeout=30)
        assert r.returncode == 1 and "is a FIFO, not a file" in r.stderr, (args, r.stderr)
        assert sorted(os.listdir(tmp_path / "out")) == ["model.safetensors"]  # config.json not published either
    with pytest.raises(ValueError, match="is a FIFO, not a file"):
        tlio.import_checkpoint(tmp_path / "ckpt.pt", tmp_path / "fifo")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_cli_follows_links(tmp_path, tiny):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "abc").write_bytes(b"old")
    (tmp_path / "snap").mkdir()
    link = tmp_path / "snap" / "model.safetensors"
    os.symlink("../blobs/abc", link)  # as a Hugging Face cache snapshot links its blob
    r = run("convert", tiny, link)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(link) and os.readlink(link) == "../blobs/abc"
    assert (blobs / "abc").read_bytes() == tiny.read_bytes()
    assert os.listdir(blobs) == ["abc"]
    os.symlink("nowhere", tmp_path / "dangling")
    r = run("convert", tiny, tmp_path / "dangling")
    assert r.returncode == 1 and "dangling: is a symbolic link to" in r.stderr and "does not exist" in r.stderr
    assert not (tmp_path / "nowhere").exists()
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    r = run("convert", tiny, tmp_path / "loop1")
    assert r.returncode == 1 and "symbolic links" in r.stderr, r.stderr


def start_convert(src, out, *extra):
    """Starts `tlio convert src out --dtype bf16` and returns it once its temporary exists."""
    p = subprocess.Popen([CLI, "convert", str(src), str(out), "--dtype", "bf16", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    mark = f".tlio-tmp-{p.pid}-"
    while not any(mark in n for n in os.listdir(out.parent)):
        assert p.poll() is None, ("finished before its temporary was seen", p.communicate())
        assert time.monotonic() < deadline
        time.sleep(0.0005)
    return p


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_cli_signal_removes_the_temporary_and_exits_128_plus_signal(tmp_path, big, sig):
    out = tmp_path / "out.safetensors"
    p = start_convert(big, out)
    p.send_signal(signal.SIGSTOP)  # hold it mid-write, so the signal surely lands there
    p.send_signal(sig)
    p.send_signal(signal.SIGCONT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    assert err.strip().count("\n") == 0 and "unfinished outputs removed" in err, err
    assert os.listdir(tmp_path) == []


def test_cli_signal_keeps_the_previous_file(tmp_path, big, tiny):
    out = tmp_path / "out.safetensors"
    out.write_bytes(tiny.read_bytes())
    p = start_convert(big, out)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=30)
    assert p.returncode == 130
    assert out.read_bytes() == tiny.read_bytes()
    assert temporaries(tmp_path) == []


def test_cli_interrupted_shard_leaves_the_previous_set(tmp_path, big):
    out = tmp_path / "shards"
    assert run("shard", big, out, "--max-size", "100MB").returncode == 0
    before = {n: (out / n).stat().st_ino for n in os.listdir(out)}
    p = subprocess.Popen([CLI, "shard", str(big), str(out), "--max-size", "40MB"], stderr=subprocess.PIPE, text=True)
    while not temporaries(out):
        assert p.poll() is None
        time.sleep(0.0005)
    p.send_signal(signal.SIGSTOP)  # surely mid-write, not yet publishing
    p.send_signal(signal.SIGTERM)
    p.send_signal(signal.SIGCONT)
    p.communicate(timeout=30)
    assert p.returncode == 143
    assert {n: (out / n).stat().st_ino for n in os.listdir(out)} == before
    assert run("merge", out, tmp_path / "merged.safetensors").returncode == 0
    assert (tmp_path / "merged.safetensors").read_bytes() == big.read_bytes()


def test_cli_shrunken_mapped_input_is_named(tmp_path, big):
    src = tmp_path / "src.safetensors"
    src.write_bytes(big.read_bytes())
    out = tmp_path / "out.safetensors"
    p = start_convert(src, out)
    p.send_signal(signal.SIGSTOP)
    os.truncate(src, 4096)  # another process cuts the file while tlio has it mapped
    p.send_signal(signal.SIGCONT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 1, err
    assert f"{src}: changed while it was read" in err, err
    assert sorted(os.listdir(tmp_path)) == ["src.safetensors"]


def test_killed_writers_leftovers_are_removed_by_the_next_write(tmp_path, big, tiny):
    out = tmp_path / "out.safetensors"
    p = start_convert(big, out)
    p.kill()
    p.communicate()
    left = temporaries(tmp_path)
    assert len(left) == 1 and f"-{p.pid}-" in left[0]
    (tmp_path / ".out.safetensors.tlio-tmp-Zz9Zz9").write_bytes(b"not ours to remove")
    assert run("convert", tiny, out).returncode == 0
    assert temporaries(tmp_path) == [".out.safetensors.tlio-tmp-Zz9Zz9"]


def test_cli_write_errors_keep_the_old_file(tmp_path, big, tiny):
    """An I/O error mid-write (here EFBIG past a file-size limit, as ENOSPC on a full disk):
    a message with the errno, exit 1, the old file as it was, nothing else left."""
    import resource
    out = tmp_path / "out.safetensors"
    out.write_bytes(tiny.read_bytes())

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    r = subprocess.run([CLI, "convert", str(big), str(out)], capture_output=True, text=True, preexec_fn=limit)
    assert r.returncode == 1, r.stderr
    assert "File too large" in r.stderr and str(out) in r.stderr, r.stderr
    assert out.read_bytes() == tiny.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["out.safetensors", "tiny.safetensors"]


def test_shard_again_replaces_the_set(tmp_path, big):
    out = tmp_path / "shards"
    out.mkdir()
    (out / "README.md").write_text("kept")
    assert run("shard", big, out, "--max-size", "50MB").returncode == 0
    first = sorted(os.listdir(out))
    assert "model-00008-of-00008.safetensors" in first  # 16 tensors of 16.8 MB, 2 a shard
    assert run("shard", big, out, "--max-size", "100MB").returncode == 0
    names = sorted(os.listdir(out))
    assert names == ["README.md"] + [f"model-{i:05}-of-00004.safetensors" for i in (1, 2, 3, 4)] + [
        "model.safetensors.index.json"]
    assert (out / "README.md").read_text() == "kept"


def test_python_writers_refuse_nodes(tmp_path):
    sock, made = nodes(tmp_path)
    t = {"w": np.ones((2, 2), dtype=np.float32)}
    import torch
    for name, what in made.items():
        for write in (lambda p: tlio.numpy.save_file(t, p), lambda p: tlio.save_file(t, p),
                      lambda p: tlio.torch.save_file({"w": torch.ones(2)}, p),
                      lambda p: tlio.torch.save_model(torch.nn.Linear(2, 2), p),
                      lambda p: tlio.serialize_file({"w": {"dtype": "float32", "shape": [1], "data": b"\0\0\0\0"}}, p)):
            with pytest.raises(ValueError, match=what) as e:
                write(tmp_path / name)
            assert str(tmp_path / name) in str(e.value)
    with pytest.raises(IsADirectoryError):
        tlio.numpy.save_file(t, tmp_path)
    assert temporaries(tmp_path) == []
    sock.close()


def test_python_ctrl_c_during_a_long_write(tmp_path, big):
    """SIGINT to a Python process inside convert_file (GIL released): KeyboardInterrupt within
    about a second, nothing left behind."""
    script = textwrap.dedent(f"""
        import sys, time, tlio
        sys.stdout.write("ready\\n"); sys.stdout.flush()
        t0 = time.monotonic()
        try:
            for _ in range(1000):
                tlio.convert_file({str(big)!r}, {str(tmp_path / 'out.safetensors')!r}, "bf16")
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    assert p.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 60
    while not temporaries(tmp_path):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.0005)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    waited = time.monotonic() - sent
    assert "KeyboardInterrupt" in out, (out, err)
    assert waited < 5, waited  # about a second, with room for a loaded machine
    assert temporaries(tmp_path) == []
    # Stopped inside the first call, not after it returned: it published nothing.
    assert not (tmp_path / "out.safetensors").exists()
