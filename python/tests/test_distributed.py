"""tlio.torch.load_distributed over a gloo group of 4 processes on 127.0.0.1, reading from
Debian's nginx: every rank gets what it asked for, the group reads the data once (nginx's access
log counts the bytes), and a rank that fails fails the call on every rank with the same error."""
import multiprocessing
import os
import pathlib
import queue
import re
import sys
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed  # noqa: E402

import tlio  # noqa: E402
import tlio.numpy  # noqa: E402
import tlio.torch  # noqa: E402
from http_servers import free_port, nginx  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import dist_workers  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.distributed.is_available() or
                                not torch.distributed.is_gloo_available(),
                                reason="torch.distributed with gloo is needed")

WORLD = 4
# Workers come from a forkserver that imported torch once (spawn would import it per worker;
# fork copies this process's threads' locks).
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["torch", "torch.distributed", "tlio.torch", "dist_workers"])


def run_group(job, deadline=180):
    """Starts WORLD workers on `job` and returns their verdicts in rank order."""
    port = free_port()
    verdicts = _CONTEXT.Queue()
    procs = [_CONTEXT.Process(target=dist_workers.worker, args=(r, WORLD, port, job, verdicts))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    got = []
    end = time.monotonic() + deadline
    try:
        while len(got) < WORLD:
            got.append(verdicts.get(timeout=max(0.1, end - time.monotonic())))
    except queue.Empty:
        pytest.fail(f"the group did not finish in {deadline} s: {got}")
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    return sorted(got, key=lambda v: v["rank"])


def log_bytes(server, since=0):
    """Body bytes nginx sent for the requests logged after line `since`, once all are logged."""
    lines = None
    while True:
        now = server.log.read_text().splitlines() if server.log.exists() else []
        if now == lines:
            break
        lines = now
        time.sleep(0.1)
    return sum(int(line.split()[1]) for line in lines[since:]), len(lines)


def data_bytes(path):
    """The size of a file's data buffer (all but its header)."""
    with open(path, "rb") as f:
        return os.path.getsize(path) - 8 - int.from_bytes(f.read(8), "little")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("dist")
    rng = np.random.default_rng(27)
    plain = {
        "a.weight": rng.standard_normal((1536, 1024), dtype=np.float32),  # 6 MiB
        "b.weight": torch.randn(384, 2048).to(torch.bfloat16),            # 1.5 MiB
        "c.bias": rng.standard_normal(1024, dtype=np.float32),
        "d.mask": rng.integers(0, 2, (64, 64)).astype(bool),
    }
    tlio.torch.save_file({k: v if isinstance(v, torch.Tensor) else torch.from_numpy(v)
                          for k, v in plain.items()}, root / "plain.safetensors")
    tlio.torch.save_file({"q.weight": torch.randn(1024, 2048), "x.weight": torch.randn(512, 2048)},
                         root / "f32.safetensors")
    tlio.quantize_file(root / "f32.safetensors", root / "int4.safetensors", "int4-g32-sym",
                       include=r"^q\.")
    tlio.quantize_file(root / "f32.safetensors", root / "nf4.safetensors", "nf4", include=r"^q\.")
    with nginx(root) as server:
        server.root = root
        yield server


def _assert_all_ok(verdicts):
    for v in verdicts:
        assert v["ok"], v
        assert v["mismatch"] == [], v


def test_whole_state_dict_is_read_once(served):
    _, before = log_bytes(served)
    local = served.root / "plain.safetensors"
    verdicts = run_group({"source": f"{served.url}/plain.safetensors", "local": str(local),
                          "inflight": 4 << 20})
    _assert_all_ok(verdicts)
    assert all(v["names"] == sorted(["a.weight", "b.weight", "c.bias", "d.mask"]) for v in verdicts)
    sent, _ = log_bytes(served, before)
    data = data_bytes(local)
    # Four ranks, each with every tensor, and the data came from nginx once (plus 4 headers).
    assert data <= sent <= 1.1 * data, (sent, data)


@pytest.mark.parametrize("quantized", ["int4", "nf4"])
def test_per_rank_slices(served, quantized):
    local = served.root / f"{quantized}.safetensors"
    plans = []
    for r in range(WORLD):
        plans.append({
            "x.weight": (slice(r * 128, (r + 1) * 128),) if r % 2 else
                        (slice(None), slice(r * 512, (r + 1) * 512)),  # rows, columns of F32
            "q.weight": (slice(r * 256, (r + 1) * 256),) if r % 2 == 0 else
                        (slice(None), slice(r * 512, (r + 1) * 512)),  # rows, columns of int4/nf4
        })
    _, before = log_bytes(served)
    verdicts = run_group({"source": f"{served.url}/{quantized}.safetensors", "local": str(local),
                          "plans": plans, "inflight": 1 << 20, "quantized": ["q.weight"]})
    _assert_all_ok(verdicts)
    sent, _ = log_bytes(served, before)
    # The union of the ranks' slices is all of both weights: read once.
    assert sent <= 1.1 * data_bytes(local), (sent, data_bytes(local))


def test_bf16_and_bool_slices_by_rank(served):
    local = served.root / "plain.safetensors"
    plans = [{"b.weight": (slice(None), slice(r * 512, (r + 1) * 512)),
              "a.weight": (r, slice(0, 100)),                       # one row, dropped
              "d.mask": (slice(r * 16, (r + 1) * 16),)} for r in range(WORLD)]
    verdicts = run_group({"source": f"{served.url}/plain.safetensors", "local": str(local),
                          "plans": plans})
    _assert_all_ok(verdicts)


def test_a_failing_rank_fails_every_rank_alike(served):
    local = served.root / "plain.safetensors"
    plans = [{"c.bias": (slice(0, 10),)} for _ in range(WORLD)]
    plans[2] = {"c.bias": (5000,)}  # past the end of its 1024 values
    start = time.monotonic()
    verdicts = run_group({"source": f"{served.url}/plain.safetensors", "local": str(local),
                          "plans": plans, "timeout": 30}, deadline=120)
    assert time.monotonic() - start < 60
    errors = {v["error"] for v in verdicts if not v["ok"]}
    assert len(errors) == 1 and all(not v["ok"] for v in verdicts), verdicts
    kind, message = errors.pop()
    assert kind == "ValueError" and message.startswith("rank 2: "), message
    assert "c.bias" in message


def test_ranks_with_other_memory_bounds_agree_on_one(served):
    verdicts = run_group({"source": f"{served.url}/plain.safetensors",
                          "local": str(served.root / "plain.safetensors"),
                          "inflight": [4 << 20, 16 << 20, 8 << 20, 64 << 20], "timeout": 30},
                         deadline=120)
    _assert_all_ok(verdicts)


def test_a_failed_read_is_the_error_every_rank_raises(served):
    local = served.root / "nf4.safetensors"
    verdicts = run_group({"source": f"{served.url}/nf4.safetensors", "local": str(local),
                          "broken_reader": 1, "inflight": 1 << 20, "timeout": 30,
                          "quantized": ["q.weight"]}, deadline=120)
    errors = {v.get("error") for v in verdicts}
    assert len(errors) == 1 and all(not v["ok"] for v in verdicts), verdicts
    kind, message = errors.pop()
    # The read's own error (errno 5), not what decoding the bytes it left would have said.
    assert kind == "OSError" and "[Errno 5] rank 1: injected read failure" in message, message


def test_needs_a_group():
    with pytest.raises(RuntimeError, match="init_process_group"):
        tlio.torch.load_distributed("nowhere.safetensors")
