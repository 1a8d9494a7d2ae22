"""Jobs of units (docs/jobs.md) from Python and the CLI: convert_file, quantize_file,
dequantize_file and import_checkpoint with job=(id, step) run as plan, units in any order and
commit give the folder the call without a job gives, byte for byte, and its result; steps out of
turn and bad jobs are refused with nothing published."""
import hashlib
import json
import os
import pathlib
import subprocess

import pytest

import tlio

from test_folders import hf_folder

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
CLI = os.environ.get("TLIO_CLI", "tlio")


def digests(folder):
    """Every file under `folder` (hidden ones too) by relative path: its SHA-256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(pathlib.Path(folder).rglob("*")) if p.is_file()}


def as_units(call, src, dst, *args, order=None, **kwargs):
    """`call` run as a job: plan, every unit (in `order`, default reversed), commit."""
    units = call(src, dst, *args, **kwargs, job=("t1", "plan"))
    assert isinstance(units, int) and units >= 1
    for k in order or reversed(range(units)):
        call(src, dst, *args, **kwargs, job=("t1", k))
    return units, call(src, dst, *args, **kwargs, job=("t1", "commit"))


@pytest.mark.parametrize("max_size", [None, 1200])
def test_convert_as_units_is_the_single_process_folder(tmp_path, max_size):
    hf_folder(tmp_path / "src")
    want = tlio.convert_file(tmp_path / "src", tmp_path / "whole", "bf16", max_size=max_size)
    units, got = as_units(tlio.convert_file, tmp_path / "src", tmp_path / "units", "bf16",
                          max_size=max_size)
    assert units == (2 if max_size is None else 4)
    assert got == want and got.lost == want.lost
    assert digests(tmp_path / "units") == digests(tmp_path / "whole")


def test_quantize_and_dequantize_as_units(tmp_path):
    hf_folder(tmp_path / "src")
    want = tlio.quantize_file(tmp_path / "src", tmp_path / "q-whole", "int4-g16-sym")
    _, got = as_units(tlio.quantize_file, tmp_path / "src", tmp_path / "q-units", "int4-g16-sym",
                      order=[0, 1, 0])
    assert got == want
    assert digests(tmp_path / "q-units") == digests(tmp_path / "q-whole")
    want = tlio.dequantize_file(tmp_path / "q-whole", tmp_path / "d-whole", "F16")
    _, got = as_units(tlio.dequantize_file, tmp_path / "q-whole", tmp_path / "d-units", "F16")
    assert got == want
    assert digests(tmp_path / "d-units") == digests(tmp_path / "d-whole")


def test_import_a_dcp_checkpoint_as_units(tmp_path):
    src = DATA / "dcp" / "two_ranks"
    want = tlio.import_checkpoint(src, tmp_path / "whole", max_size=300, import_all=True)
    units, got = as_units(tlio.import_checkpoint, src, tmp_path / "units", max_size=300, import_all=True)
    assert units == len([n for n in os.listdir(tmp_path / "whole") if n.endswith(".safetensors")]) > 1
    assert got == want
    assert digests(tmp_path / "units") == digests(tmp_path / "whole")


def test_steps_out_of_turn_publish_nothing(tmp_path):
    hf_folder(tmp_path / "src")
    out = tmp_path / "out"
    with pytest.raises(FileNotFoundError, match="no plan"):
        tlio.convert_file(tmp_path / "src", out, "f16", job=("j", 0))
    assert tlio.convert_file(tmp_path / "src", out, "f16", job=("j", "plan")) == 2
    with pytest.raises(ValueError, match="2 units, no unit 2"):
        tlio.convert_file(tmp_path / "src", out, "f16", job=("j", 2))
    tlio.convert_file(tmp_path / "src", out, "f16", job=("j", 1))
    with pytest.raises(FileNotFoundError, match="unit 0 of job j has not finished"):
        tlio.convert_file(tmp_path / "src", out, "f16", job=("j", "commit"))
    assert sorted(os.listdir(out)) == [".tlio-job-j"]
    tlio.convert_file(tmp_path / "src", out, "f16", job=("j", "abort"))
    assert os.listdir(out) == []
    with pytest.raises(ValueError, match="job id"):
        tlio.convert_file(tmp_path / "src", out, "f16", job=("a/b", "plan"))
    with pytest.raises(ValueError, match="step"):
        tlio.convert_file(tmp_path / "src", out, "f16", job=("j", "later"))
    with pytest.raises(TypeError):
        tlio.convert_file(tmp_path / "src", out, "f16", job="j")


def run_cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)


def test_the_cli_runs_a_job_step_by_step(tmp_path):
    hf_folder(tmp_path / "src")
    assert run_cli("convert", tmp_path / "src", tmp_path / "whole", "--dtype", "bf16").returncode == 0
    base = ["convert", tmp_path / "src", tmp_path / "units", "--dtype", "bf16", "--job", "c7"]
    plan = run_cli(*base, "--job-step", "plan", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout) == {"output": str(tmp_path / "units"), "job": "c7",
                                       "step": "plan", "units": 2}
    for k in (1, 0):
        r = run_cli(*base, "--job-step", k)
        assert r.returncode == 0 and r.stdout == f"job c7: unit {k} written\n", r.stderr
    r = run_cli(*base, "--job-step", "commit", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["converted"] == 4
    assert digests(tmp_path / "units") == digests(tmp_path / "whole")
    usage = run_cli(*base)
    assert usage.returncode == 2 and "--job and --job-step go together" in usage.stderr
    bad = run_cli(*base[:-1], "x/y", "--job-step", "plan")
    assert bad.returncode == 2 and "--job takes" in bad.stderr
