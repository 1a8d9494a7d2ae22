"""Folder jobs on Ray (docs/jobs.md): a large folder converted, quantized, dequantized or imported
from a checkpoint as units across a Ray cluster, a unit per output shard, published once.

Each function takes the arguments of the single-process function it is named after
(tlio.convert_file, tlio.quantize_file, tlio.dequantize_file, tlio.import_checkpoint) and:

- `workers`: how many units run at once (default: the cluster's CPUs);
- `address`: the Ray cluster to join ("auto", "ray://host:10001", ...). None: the one this
  process is connected to already, or the one RAY_ADDRESS names, or else a local cluster of
  `workers` CPUs (os.cpu_count() without `workers`) started here;
- `retries`: how many times a unit is run again when its worker dies or it fails with an
  OSError (a unit rewrites its own files whole, so a rerun leaves one complete copy);
- `num_cpus`: the CPUs Ray reserves for each unit (1; tlio's own threads use what the node has;
  without `workers`, as many units run at once as the cluster's CPUs hold).

The plan runs in this process, the units as Ray tasks, the commit here again: the folder
appears whole, every byte what the single-process call writes, and the call returns what that
call returns; on any failure the job is aborted and `dst` stays as it was. `dst` must be a
folder every worker and this process see (a local disk for a one-machine cluster, else a shared
one); sources may be anywhere tlio reads (a path, http(s)://, s3://, gs://, hf://), as long as
each worker can read them (credentials in its environment).
"""
import math
import os
import uuid

import tlio

__all__ = ["convert", "quantize", "dequantize", "import_checkpoint"]


def convert(src, dst, dtype, *args, workers=None, address=None, retries=3, num_cpus=1, **kwargs):
    """tlio.convert_file(src, dst, dtype, ...) of a model folder, run as units on Ray."""
    return _run("convert_file", (src, dst, dtype) + args, kwargs, workers, address, retries,
                num_cpus)


def quantize(src, dst, scheme, *args, workers=None, address=None, retries=3, num_cpus=1,
             **kwargs):
    """tlio.quantize_file(src, dst, scheme, ...) of a model folder, run as units on Ray."""
    return _run("quantize_file", (src, dst, scheme) + args, kwargs, workers, address, retries,
                num_cpus)


def dequantize(src, dst, *args, workers=None, address=None, retries=3, num_cpus=1, **kwargs):
    """tlio.dequantize_file(src, dst, ...) of a model folder, run as units on Ray."""
    return _run("dequantize_file", (src, dst) + args, kwargs, workers, address, retries, num_cpus)


def import_checkpoint(src, dst, *args, workers=None, address=None, retries=3, num_cpus=1,
                      **kwargs):
    """tlio.import_checkpoint(src, dst, ...) of a checkpoint directory (pytorch_model.bin shards
    or a DCP folder) into a model folder, run as units on Ray (a unit per output shard: give
    `max_size` to split a DCP checkpoint, which is otherwise one model.safetensors)."""
    return _run("import_checkpoint", (src, dst) + args, kwargs, workers, address, retries,
                num_cpus)


def _unit(name, args, kwargs, job_id, unit):
    """One unit, on a Ray worker: the same call with the unit's step."""
    getattr(tlio, name)(*args, **kwargs, job=(job_id, unit))


_remote_units = {}


def _remote_unit(ray, num_cpus, retries):
    """_unit as a Ray task with these options, made once: each new one is exported to the
    cluster again, which every worker then fetches."""
    key = (_unit, num_cpus, retries)
    if key not in _remote_units:
        _remote_units[key] = ray.remote(num_cpus=num_cpus, max_retries=retries,
                                        retry_exceptions=[OSError])(_unit)
    return _remote_units[key]


def _connect(ray, address, workers, num_cpus):
    if ray.is_initialized():
        return
    if address is not None or os.environ.get("RAY_ADDRESS"):
        ray.init(address=address, log_to_driver=False)
        return
    # A local cluster with room for `workers` units: its workers run this Python and find tlio
    # where this process did.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tlio.__file__)))
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    cpus = math.ceil(workers * num_cpus) if workers else os.cpu_count()
    ray.init(num_cpus=max(cpus, math.ceil(num_cpus)), include_dashboard=False,
             log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})


def _run(name, args, kwargs, workers, address, retries, num_cpus):
    import ray

    if "job" in kwargs:
        raise TypeError("tlio.ray runs the job's steps itself: no `job` argument")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers is a positive int, not {workers!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries is an int >= 0, not {retries!r}")
    if not isinstance(num_cpus, (int, float)) or isinstance(num_cpus, bool) or num_cpus <= 0:
        raise ValueError(f"num_cpus is a number > 0, not {num_cpus!r}")
    call = getattr(tlio, name)
    job_id = uuid.uuid4().hex
    pending = []
    try:
        units = call(*args, **kwargs, job=(job_id, "plan"))
        _connect(ray, address, workers, num_cpus)
        at_once = workers or max(1, int(ray.cluster_resources().get("CPU", 1) // num_cpus))
        remote = _remote_unit(ray, num_cpus, retries)
        next_unit = 0
        while next_unit < units or pending:
            while next_unit < units and len(pending) < at_once:
                pending.append(remote.remote(name, args, kwargs, job_id, next_unit))
                next_unit += 1
            done, pending = ray.wait(pending, num_returns=1)
            ray.get(done)  # a unit's error, after its retries, ends the job
        return call(*args, **kwargs, job=(job_id, "commit"))
    except BaseException:
        try:
            for ref in pending:
                ray.cancel(ref, force=True)
            if pending:  # cancelled units stopped before their folder goes
                ray.wait(pending, num_returns=len(pending), timeout=60)
            call(*args, **kwargs, job=(job_id, "abort"))
        except Exception:  # the job's own error says more
            pass
        raise
