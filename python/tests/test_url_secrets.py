"""A presigned URL's query is a secret (its signature, its credential): every command given one
reads through it and prints it, if at all, with the values cut (`X-Amz-Signature=...`), on
stdout, stderr, in --json and in the files it writes about its inputs (a report's page).
Debian's nginx on 127.0.0.1 serves the files; it ignores the query, as a signed store checks it."""
import os
import pathlib
import subprocess

import pytest

import tlio
from http_servers import nginx

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
SECRET = "S3cr3tSignature0123456789"
QUERY = f"?X-Amz-Credential=AKIAEXAMPLE%2F20261206&X-Amz-Signature={SECRET}"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("signed")
    (root / "m.safetensors").write_bytes((DATA / "quant" / "tiny_model.safetensors").read_bytes())
    tlio.quantize_file(root / "m.safetensors", root / "q.safetensors", "nf4")
    with nginx(root) as server:
        yield server


def commands(url, qurl, out):
    """Every command that takes an input location, given the signed URL."""
    name = "model.layers.0.self_attn.q_proj.weight"
    return [
        ["validate", url], ["inspect", url], ["inspect", url, "--json"], ["verify", url], ["hash", url],
        ["convert", url, out / "c.safetensors"], ["convert", url, out / "b.safetensors", "--dtype", "bf16", "--json"],
        ["convert", url, out / "k.safetensors", "--keep", "q_proj"],
        ["quantize", url, out / "q.safetensors", "--scheme", "int4-g32-sym"],
        ["quantize", url, out / "q2.safetensors", "--scheme", "nf4", "--json"],
        ["dequantize", qurl, out / "d.safetensors"], ["dequantize", qurl, out / "d2.safetensors", "--json"],
        ["shard", url, out / "shards", "--max-size", "2KB"], ["shard", url, out / "shards2", "--max-size", "2KB", "--json"],
        ["cat", url, name], ["stats", url], ["stats", url, "--json"], ["diff", url, qurl], ["diff", url, url, "--json"],
        ["slice", url, f"{name}[0:2, :]", "-o", out / "s.safetensors"], ["slice", url, f"{name}[0:2]", "--dry-run", "--json"],
        ["metadata", url], ["metadata", url, "--json"],
        ["report", url, "--against", qurl, "-o", out / "r.html"], ["report", url, "--json", "-o", out / "r2.html"],
    ]


def test_no_command_prints_a_signed_urls_secret(served, tmp_path):
    url, qurl = f"{served.url}/m.safetensors{QUERY}", f"{served.url}/q.safetensors{QUERY}"
    for args in commands(url, qurl, tmp_path):
        r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)
        assert r.returncode in (0, 1), (args, r.stderr)  # diff of different values exits 1
        assert SECRET not in r.stdout + r.stderr, (args, r.stdout + r.stderr)
        assert "AKIAEXAMPLE" not in r.stdout + r.stderr, args
    for page in ("r.html", "r2.html"):
        assert SECRET not in (tmp_path / page).read_text(), page
    # Errors too: a file that is not there, named without the query's values.
    r = subprocess.run([CLI, "inspect", f"{served.url}/nope.safetensors{QUERY}"], capture_output=True, text=True)
    assert r.returncode == 1 and "nope.safetensors" in r.stderr and SECRET not in r.stderr, r.stderr
