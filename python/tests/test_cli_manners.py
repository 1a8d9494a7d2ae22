"""The command line's manners: usage errors exit 2 with readable bounds, cat slices with steps
and shows quantized weights dequantized, stats agrees with numpy."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tlio
import tlio.torch

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.fixture
def sample(tmp_path):
    rng = np.random.default_rng(7)
    tensors = {"x": np.arange(24, dtype=np.int32).reshape(2, 3, 4),
               "f": rng.standard_normal((2, 3, 4)).astype(np.float32),
               "model.layers.0.mlp.up_proj.weight": rng.standard_normal((64, 128)).astype(np.float32)}
    tlio.save_file(tensors, tmp_path / "s.safetensors")
    return tmp_path / "s.safetensors", tensors


@pytest.mark.parametrize("args, says", [
    (["shard", "{s}", "{tmp}/o", "--max-size", "5XB"], 'invalid size "5XB"'),
    (["shard", "{s}", "{tmp}/o", "--max-size", "0"], 'size "0" is less than 1 byte'),
    (["shard", "{s}", "{tmp}/o", "--max-size", "99999999999999999999999"], "more than 16 EiB"),
    (["import", "{s}", "{tmp}/o.safetensors", "--max-size", "lots"], 'invalid size "lots"'),
    (["convert", "{s}", "{tmp}/o.safetensors", "--keep", "["], "--keep: invalid regex '['"),
    (["convert", "{s}", "{tmp}/o.safetensors", "--drop", "(a"], "--drop: invalid regex '(a'"),
    (["convert", "{s}", "{tmp}/o.safetensors", "--rename", "(=x"], "--rename: invalid regex '('"),
    (["convert", "{s}", "{tmp}/o.safetensors", "--dtype", "bf16", "--include", "*"], "--include: invalid regex"),
    (["quantize", "{s}", "{tmp}/o.safetensors", "--scheme", "nf4", "--exclude", "["], "--exclude: invalid regex"),
    (["inspect", "{s}", "--filter", "("], "--filter: invalid regex '('"),
    (["cat", "{s}", "x", "--slice", "0:3:x"], "'x' is not an integer"),
    (["cat", "{s}", "x", "--slice", "::0"], "step 0"),
    (["cat", "{s}", "x", "--slice", "1:2:3:4"], "more than start:stop:step"),
    (["cat", "{s}", "x", "--slice", "99999999999999999999"], "out of range"),
    (["cat", "{s}", "x", "--slice", "2"], "index 2 is out of range for dimension 0 of size 2"),
    (["cat", "{s}", "x", "--slice", "0,-4"], "index -4 is out of range for dimension 1 of size 3"),
    (["cat", "{s}", "x", "--slice", "0,0,0,0"], "4 entries but tensor x has 3 dimensions"),
    (["diff", "{s}", "{s}", "--atol", "-1"], "--atol: -1 is not a number from 0 up"),
    (["diff", "{s}", "{s}", "--rtol", "1e999"], "--rtol: 1e999 is out of range: a number from 0 to about 1.8e308"),
    (["diff", "{s}", "{s}", "--atol", "nan"], "--atol: nan is not a number"),
    (["bigram", "generate", "{tmp}", "--tokens", "-5"], "--tokens: -5 is not a whole number from 0 to 1,073,741,824"),
    (["bigram", "generate", "{tmp}", "--seed", "x"], "--seed: x is not a whole number"),
    (["bigram", "generate", "{tmp}", "--temperature", "-0.5"], "--temperature: -0.5 is not a number"),
    (["quantize", "{s}", "{tmp}/o.safetensors", "--scheme", "nf4", "--blocksize", "1e400"], "blocksize"),
])
def test_usage_errors_exit_2_with_readable_bounds(sample, tmp_path, args, says):
    path, _ = sample
    r = run(*[a.format(s=path, tmp=tmp_path) for a in args])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says in r.stderr, r.stderr
    assert len(max(r.stderr.split(), key=len)) < 60, r.stderr  # no 309-digit bound
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.safetensors").exists()


def test_a_slice_past_the_end_is_a_usage_error_in_json_too(sample):
    path, _ = sample
    r = run("cat", path, "x", "--slice", "5", "--json")
    assert r.returncode == 2
    assert "out of range" in json.loads(r.stdout)["error"]["message"]


@pytest.mark.parametrize("spec, index", [
    ("::2", np.s_[::2]), ("::-1", np.s_[::-1]), ("::-1,1,::-2", np.s_[::-1, 1, ::-2]),
    ("1,::-1,1:3", np.s_[1, ::-1, 1:3]), (":,::2,1::2", np.s_[:, ::2, 1::2]),
    ("-1,-2:,-1:-4:-1", np.s_[-1, -2:, -1:-4:-1]), ("5:,:", np.s_[5:, :]), ("0,0,-1", np.s_[0, 0, -1]),
    ("::-3,10:-10:-1", np.s_[::-3, 10:-10:-1]),
    ("0:5:9223372036854775807", np.s_[0:5:9223372036854775807]),  # steps near the int64 limit
    ("::-9223372036854775802,0", np.s_[::-9223372036854775802, 0]),
])
def test_cat_slices_as_numpy(sample, spec, index):
    path, tensors = sample
    for name in ("x", "f"):
        r = run("cat", path, name, "--slice", spec, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        want = tensors[name][index]
        assert doc["shape"] == list(want.shape), (spec, name)
        assert np.array_equal(np.array(doc["values"], dtype=want.dtype).reshape(want.shape), want)


def test_cat_of_a_quantized_weight_prints_its_dequantized_values(sample, tmp_path):
    path, _ = sample
    name = "model.layers.0.mlp.up_proj.weight"
    for scheme in ("nf4", "int4-g32-sym", "int8"):
        q = tmp_path / f"{scheme}.safetensors"
        assert run("quantize", path, q, "--scheme", scheme).returncode == 0
        with tlio.safe_open(q, "np") as f:
            want = f.get_dequantized(name, "F32")
        r = run("cat", q, name, "--slice", "3:9:2,::-7", "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["dtype"] == "F32" and doc["scheme"] == scheme
        assert np.array_equal(np.array(doc["values"], dtype=np.float32), want[3:9:2, ::-7])
        text = run("cat", q, name, "--slice", "0,:3")
        assert text.returncode == 0 and text.stdout.startswith("[") and "..." not in text.stdout


def test_stats_agrees_with_numpy(tmp_path):
    rng = np.random.default_rng(3)
    big = rng.standard_normal((2048, 2100)).astype(np.float32)  # more than 4 chunks: all cores
    big[5, 7] = np.nan
    big[9, 1] = np.inf
    tlio.save_file({"big": big, "small": np.arange(5, dtype=np.float16)}, tmp_path / "b.safetensors")
    r = run("stats", tmp_path / "b.safetensors", "--json")
    assert r.returncode == 0, r.stderr
    got = {t["name"]: t for t in json.loads(r.stdout)["tensors"]}
    finite = big[np.isfinite(big)].astype(np.float64)
    b = got["big"]
    assert (b["count"], b["nan"], b["inf"]) == (big.size, 1, 1)
    assert b["min"] == finite.min() and b["max"] is None  # JSON has no infinity: null
    assert b["mean"] == pytest.approx(finite.mean(), rel=1e-12, abs=1e-15)
    assert b["std"] == pytest.approx(finite.std(), rel=1e-12)
    assert got["small"]["mean"] == 2.0 and got["small"]["max"] == 4.0
    again = run("stats", tmp_path / "b.safetensors", "--json")
    assert again.stdout == r.stdout  # the same figures every run, whichever thread did what


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "bfloat16"])
def test_stats_histogram_and_figures_are_numpys(tmp_path, dtype):
    """Each dtype's figures as numpy computes them over the values as float64, the histogram
    bin for bin (np.histogram over [min, max]), across chunks and threads."""
    rng = np.random.default_rng(11)
    values = rng.standard_normal(3 * (1 << 20) + 12345) * 40
    if dtype == "bfloat16":
        import torch
        t = torch.from_numpy(values.astype(np.float32)).bfloat16()
        tlio.torch.save_file({"v": t}, tmp_path / "v.safetensors")
        expected = t.float().numpy().astype(np.float64)
    else:
        arr = values.astype(dtype)
        tlio.save_file({"v": arr}, tmp_path / "v.safetensors")
        expected = arr.astype(np.float64)
    r = run("stats", tmp_path / "v.safetensors", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["tensors"][0]
    assert got["min"] == expected.min() and got["max"] == expected.max()
    assert got["zero"] == int((expected == 0).sum()) and got["count"] == expected.size
    assert got["mean"] == pytest.approx(expected.mean(), rel=1e-12, abs=1e-12)
    assert got["std"] == pytest.approx(expected.std(), rel=1e-12)
    want, _ = np.histogram(expected, bins=16, range=(expected.min(), expected.max()))
    assert got["histogram"] == want.tolist()


def pipe(args, data):
    return subprocess.run([CLI, *map(str, args)], input=data, capture_output=True, timeout=120)


def test_dash_is_stdin_and_stdout(sample, tmp_path):
    path, tensors = sample
    data = path.read_bytes()
    r = pipe(["convert", "-", "-", "--dtype", "bf16"], data)
    assert r.returncode == 0, r.stderr
    assert b"<stdin> -> -: 2 tensors converted to BF16, 1 kept" in r.stderr  # the report: on stderr
    (tmp_path / "bf16.safetensors").write_bytes(r.stdout)
    assert pipe(["convert", path, tmp_path / "ref.safetensors", "--dtype", "bf16"], b"").returncode == 0
    assert r.stdout == (tmp_path / "ref.safetensors").read_bytes()  # the same canonical bytes
    for args in (["quantize", "-", "-", "--scheme", "nf4"], ["metadata", "-", "--set", "k=v", "-o", "-"],
                 ["convert", "-", "-", "--drop", "^f$"]):
        r = pipe(args, data)
        assert r.returncode == 0, (args, r.stderr)
        assert pipe(["validate", "-"], r.stdout).returncode == 0, args
    q = pipe(["quantize", "-", "-", "--scheme", "nf4"], data).stdout
    d = pipe(["dequantize", "-", "-"], q)
    assert d.returncode == 0 and pipe(["validate", "-"], d.stdout).stdout == b"<stdin>: OK\n"
    inspect = pipe(["inspect", "-", "--json"], data)
    assert json.loads(inspect.stdout)["path"] == "<stdin>"
    stats = pipe(["stats", "-", "x", "--json"], data)
    assert json.loads(stats.stdout)["tensors"][0]["max"] == 23


@pytest.mark.parametrize("cut, says", [
    (lambda d: d[:5], "rule 1"),
    (lambda d: d[:40], "inside the"),
    (lambda d: d[:-1], "truncated"),
    (lambda d: d + b"extra", "goes on past the"),
    (lambda d: b"hello, this is text", "looks like text"),
])
def test_a_bad_stdin_is_refused_with_the_rule(sample, cut, says):
    path, _ = sample
    r = pipe(["convert", "-", "-", "--dtype", "bf16"], cut(path.read_bytes()))
    assert r.returncode == 1 and says in r.stderr.decode(), r.stderr
    assert r.stdout == b""  # nothing half-written on stdout


def test_dash_output_refuses_json_and_stdin_refuses_in_place(sample):
    path, _ = sample
    r = run("convert", path, "-", "--json")
    assert r.returncode == 2 and "both use standard output" in r.stderr
    r = pipe(["metadata", "-", "--set", "k=v"], path.read_bytes())
    assert r.returncode == 1 and b"standard input is not a local file" in r.stderr


def test_merge_and_import_to_stdout_report_on_stderr(sample, tmp_path):
    path, _ = sample
    assert run("shard", path, tmp_path / "dir", "--max-size", "10KB").returncode == 0
    r = pipe(["merge", tmp_path / "dir", "-"], b"")
    assert r.returncode == 0 and b"merged" in r.stderr, r.stderr
    assert r.stdout == pipe(["convert", path, "-"], b"").stdout  # the same canonical bytes
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(3)}, tmp_path / "c.pt")
    r = pipe(["import", tmp_path / "c.pt", "-"], b"")
    assert r.returncode == 0 and b"1 tensor" in r.stderr, r.stderr
    assert pipe(["validate", "-"], r.stdout).stdout == b"<stdin>: OK\n"


def test_cat_reads_big_tensors_in_row_groups(tmp_path):
    rng = np.random.default_rng(11)
    w = rng.standard_normal((3000, 2000)).astype(np.float32)  # rows of 2000: groups of 2796 rows
    path = tmp_path / "big.safetensors"
    tlio.save_file({"model.layers.0.mlp.up_proj.weight": w}, path)
    name = "model.layers.0.mlp.up_proj.weight"
    for spec, index in (("0:3000:1499,::999", np.s_[0:3000:1499, ::999]),
                        ("::-1,7", np.s_[::-1, 7]), ("2990:,-3:", np.s_[2990:, -3:])):
        doc = json.loads(run("cat", path, name, "--slice", spec, "--json").stdout)
        assert np.array_equal(np.array(doc["values"], dtype=np.float32), w[index]), spec
    q = tmp_path / "q.safetensors"
    assert run("quantize", path, q, "--scheme", "int8").returncode == 0
    with tlio.safe_open(q, "np") as f:
        want = f.get_dequantized(name, "F32")
    doc = json.loads(run("cat", q, name, "--slice", "0:3000:1499,::999", "--json").stdout)
    assert np.array_equal(np.array(doc["values"], dtype=np.float32), want[0:3000:1499, ::999])
