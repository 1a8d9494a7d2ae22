"""What the trust tests (test_trust_hash.py, test_trust_hub.py, test_trust_signatures.py) share:
the tlio command, SHA-256 digests, a key pair per curve and a 1 MiB safetensors file (module
fixtures), and a tiny model folder to sign."""
import hashlib
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tlio
import tlio.numpy
import model_signing_ref as ref

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
