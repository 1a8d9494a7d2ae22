"""tlio.ray (docs/jobs.md) on a local Ray cluster of 2 CPUs, users' stack only (Ray is pinned in
scripts/pypi/consumers.txt): a folder converted, quantized, dequantized and a DCP checkpoint
imported as units give the single-process folder byte for byte (SHA-256 of every file) for 1, 2
and 4 workers; a worker that dies is retried; a unit that keeps failing aborts the job and
leaves the output folder as it was."""
import os
import pathlib

import pytest

import tlio

ray = pytest.importorskip("ray")
import tlio.ray  # noqa: E402  (after the skip: it needs ray)

from test_folders import hf_folder  # noqa: E402
from test_jobs import digests  # noqa: E402

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))


@pytest.fixture(scope="module")
def cluster():
    """A local cluster of 2 CPUs, its workers importing tlio from where this process does."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tlio.__file__)))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=80 * 1024 * 1024,
             runtime_env={"env_vars": {"PYTHONPATH": package_root}})
    yield
    ray.shutdown()


def test_units_on_ray_are_the_single_process_folder_for_1_2_and_4_workers(tmp_path, cluster):
    hf_folder(tmp_path / "src")
    want_result = tlio.convert_file(tmp_path / "src", tmp_path / "whole", "bf16", max_size=1200)
    want = digests(tmp_path / "whole")
    for workers in (1, 2, 4):
        out = tmp_path / f"ray-{workers}"
        got = tlio.ray.convert(tmp_path / "src", out, "bf16", max_size=1200, workers=workers)
        assert got == want_result
        assert digests(out) == want, workers

    q = tlio.quantize_file(tmp_path / "src", tmp_path / "q-whole", "int4-g16-sym")
    assert tlio.ray.quantize(tmp_path / "src", tmp_path / "q-ray", "int4-g16-sym", workers=2) == q
    assert digests(tmp_path / "q-ray") == digests(tmp_path / "q-whole")
    d = tlio.dequantize_file(tmp_path / "q-whole", tmp_path / "d-whole", "bf16")
    assert tlio.ray.dequantize(tmp_path / "q-whole", tmp_path / "d-ray", "bf16", workers=2) == d
    assert digests(tmp_path / "d-ray") == digests(tmp_path / "d-whole")
    src = DATA / "dcp" / "two_ranks"
    i = tlio.import_checkpoint(src, tmp_path / "i-whole", max_size=300, import_all=True)
    assert tlio.ray.import_checkpoint(src, tmp_path / "i-ray", max_size=300, import_all=True, workers=2) == i
    assert digests(tmp_path / "i-ray") == digests(tmp_path / "i-whole")


def test_a_worker_that_dies_is_retried(tmp_path, cluster, monkeypatch):
    hf_folder(tmp_path / "src")
    tlio.convert_file(tmp_path / "src", tmp_path / "whole", "f16")
    marker = str(tmp_path / "died")
    run_unit = tlio.ray._unit

    def dies_once(name, args, kwargs, job_id, unit):  # sent by value: a nested function
        if unit == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker process gone mid-job, as a lost node
        run_unit(name, args, kwargs, job_id, unit)

    monkeypatch.setattr(tlio.ray, "_unit", dies_once)
    tlio.ray.convert(tmp_path / "src", tmp_path / "out", "f16", workers=2, retries=2)
    assert os.path.exists(marker)
    assert digests(tmp_path / "out") == digests(tmp_path / "whole")


def test_a_unit_that_keeps_failing_leaves_the_output_as_it_was(tmp_path, cluster, monkeypatch):
    hf_folder(tmp_path / "src")
    tlio.convert_file(tmp_path / "src", tmp_path / "out", "f32")  # the folder a job would replace
    before = digests(tmp_path / "out")
    run_unit = tlio.ray._unit

    def fails(name, args, kwargs, job_id, unit):
        if unit == 0:
            raise OSError(5, "disk on fire")
        run_unit(name, args, kwargs, job_id, unit)

    monkeypatch.setattr(tlio.ray, "_unit", fails)
    with pytest.raises(Exception, match="disk on fire"):
        tlio.ray.convert(tmp_path / "src", tmp_path / "out", "bf16", workers=2, retries=1)
    assert digests(tmp_path / "out") == before
    assert not any(p.name.startswith(".tlio-job-") for p in (tmp_path / "out").iterdir())
    with pytest.raises(TypeError, match="no `job` argument"):
        tlio.ray.convert(tmp_path / "src", tmp_path / "x", "bf16", job=("a", "plan"))
