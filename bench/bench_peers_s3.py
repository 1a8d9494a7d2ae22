#!/usr/bin/env python3
"""tlio against run:ai's model streamer on S3 (issue 44): the 1 GiB BF16 file of bench_peers.py
served by s3rver on 127.0.0.1, loaded whole to torch in a fresh process per run (imports not
timed), each side in turn, medians of ROUNDS:

  tlio        tlio.torch.load_file("s3://bucket/f.safetensors") (ranges over up to 4 kept-alive
              connections, tensors fetched at once); "tlio 16" with TLIO_HTTP_CONNECTIONS=16
  runai C     SafetensorsStreamer().stream_file(URL) + get_tensors() with
              RUNAI_STREAMER_CONCURRENCY=C, for C in CONCURRENCY; the goal compares tlio with the
              best of them (<= 0.8x)

Every run's tensors are checked against SHA-256s of three of them computed from the bytes
written. run:ai reaches s3rver through AWS_ENDPOINT_URL with path-style addressing
(RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0), tlio through the same variable. Both sign.

Usage (after a build and scripts/install-deps.sh, which installs s3rver):
  /usr/bin/python3 bench/bench_peers_s3.py [BUILD] [DIR] [ROUNDS]
Uses BUILD/bench-venv as bench_peers.py makes it (its pins include runai-model-streamer-s3).
"""
import contextlib
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python" / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from s3_servers import plain_s3rver  # noqa: E402
import bench_peers  # noqa: E402  (its argv: BUILD DIR ROUNDS, the same as this script's)

CONCURRENCY = (8, 16, 32)
KEY, SECRET = "S3RVER", "S3RVER"

CHILD = r'''
import hashlib, json, os, sys, time
side, url, picks = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
import torch
if side == "tlio":
    import tlio.torch
else:
    from runai_model_streamer import SafetensorsStreamer

def raw(t):
    return t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()

t0 = time.perf_counter()
digests = {}
if side == "tlio":
    d = tlio.torch.load_file(url)
    digests = {k: hashlib.sha256(raw(d[k])).hexdigest() for k in picks}
else:
    with SafetensorsStreamer() as s:
        s.stream_file(url)
        for name, t in s.get_tensors():
            if name in picks:  # tensors may live in the streamer's buffers: hashed as they come
                digests[name] = hashlib.sha256(raw(t)).hexdigest()
t1 = time.perf_counter()
print(json.dumps({"s": t1 - t0, "digests": digests}))
'''


def main():
    py, failed, _ = bench_peers.ensure_venv()
    rounds = bench_peers.ROUNDS
    work = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-peers-s3-", dir=bench_peers.DIR))
    servers = contextlib.ExitStack()
    try:
        endpoint = servers.enter_context(plain_s3rver(work / "s3rver"))
        env = {**bench_peers.ENV, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
               "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
               "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0", "AWS_EC2_METADATA_DISABLED": "true"}
        path = work / "bf16.safetensors"
        pool = np.random.default_rng(0).standard_normal(1 << 25, dtype=np.float32)
        tensors = bench_peers.write_file(path, "BF16", (pool.view(np.uint32) >> 16).astype(np.uint16))
        del pool
        names = sorted(tensors)
        picks = [names[0], names[len(names) // 2], names[-1]]
        want = bench_peers.expected(tensors, picks)["full"]
        del tensors
        # Into the bucket by tlio's own upload (s3rver keeps it on disk, in its page cache).
        subprocess.run([str(bench_peers.BUILD / "tlio"), "convert", str(path), "s3://bucket/f.safetensors"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        url = "s3://bucket/f.safetensors"
        sides = {"tlio": ("tlio", {}), "tlio 16": ("tlio", {"TLIO_HTTP_CONNECTIONS": "16"})}
        if "runai-model-streamer-s3" not in failed and "runai-model-streamer" not in failed:
            sides.update({f"runai {c}": ("runai", {"RUNAI_STREAMER_CONCURRENCY": str(c)}) for c in CONCURRENCY})
        times, wrong, errors = {k: [] for k in sides}, set(), {}
        for _ in range(rounds):
            for key, (side, extra) in sides.items():
                if key in errors:
                    continue
                r = subprocess.run([str(py), "-c", CHILD, side, url, json.dumps(picks)], capture_output=True,
                                   text=True, env={**env, **extra}, timeout=900)
                if r.returncode:
                    errors[key] = bench_peers.short(bench_peers.last_line(r.stderr), 300)
                    continue
                res = json.loads(bench_peers.last_line(r.stdout))
                times[key].append(res["s"])
                if res["digests"] != want:
                    wrong.add(key)
        size = path.stat().st_size
        med = {k: statistics.median(v) for k, v in times.items() if v}
        peers = [v for k, v in med.items() if not k.startswith("tlio")]
        print(f"{size / 2**30:.3f} GiB BF16 from s3rver on 127.0.0.1, whole file to torch, {rounds} rounds in turn")
        print("| side | median | MiB/s | runs | / best run:ai |")
        print("|---|---|---|---|---|")
        for k, m in med.items():
            ratio = f"{m / min(peers):.2f}" if peers else ""
            print(f"| {k}{' WRONG' if k in wrong else ''} | {m:.3f} s | {size / m / 2**20:.0f} | "
                  f"{', '.join(f'{t:.2f}' for t in times[k])} | {ratio} |")
        for k, why in errors.items():
            print(f"- {k}: failed: {why}")
    finally:
        servers.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
