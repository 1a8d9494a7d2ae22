#!/usr/bin/env python3
"""`tlio stats FILE --json` against a numpy script computing the same figures (issue 41: goal
<= 0.5x), whole processes, the file in the page cache, each side run in turn (A B A B ...),
medians:

  numpy:  every tensor through tlio.safe_open(..., "np") (zero-copy), then isnan, isinf, ==0,
          min, max, mean and std in float64, and np.histogram(16 bins over [min, max])
  tlio:   tlio stats FILE --json (every core; its figures checked against numpy's)

The file: 16 F32 tensors of 1024 x 4096 (256 MiB) and 8 BF16 ones (64 MiB), normal values.
Usage (after a build): /usr/bin/python3 bench/bench_stats.py [BUILD] [DIR] [ROUNDS]
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))

NUMPY_SCRIPT = r"""
import json, sys
import numpy as np
import tlio
out = []
with tlio.safe_open(sys.argv[1], "np") as f:
    for name in f.keys():
        try:
            a = f.get_tensor(name)
        except tlio.SafetensorError:  # BF16, which numpy has no type for: widened to F32
            a = f.get_tensor(name, dtype="float32")
        nan, inf, zero = int(np.isnan(a).sum()), int(np.isinf(a).sum()), int((a == 0).sum())
        v = a[np.isfinite(a)] if nan or inf else a
        mn, mx = float(v.min()), float(v.max())
        mean, std = float(v.mean(dtype=np.float64)), float(v.std(dtype=np.float64))
        hist = np.histogram(v.astype(np.float64), bins=16, range=(mn, mx))[0].tolist()
        out.append({"name": name, "min": mn, "max": mx, "mean": mean, "std": std, "histogram": hist})
print(json.dumps(out))
"""


def make_file(path):
    subprocess.run([sys.executable, "-c", r"""
import sys
import numpy as np
import torch
import tlio.torch
rng = np.random.default_rng(0)
t = {f"layers.{i}.w": torch.from_numpy(rng.standard_normal((1024, 4096), dtype=np.float32)) for i in range(16)}
t.update({f"layers.{i}.b": torch.from_numpy(rng.standard_normal((1024, 4096), dtype=np.float32)).bfloat16()
          for i in range(8)})
tlio.torch.save_file(t, sys.argv[1])
""", str(path)], check=True, env=ENV)


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, check=True)
    return time.perf_counter() - t0, r.stdout


def main():
    with tempfile.TemporaryDirectory(dir=sys.argv[2] if len(sys.argv) > 2 else None) as tmp:
        path = pathlib.Path(tmp) / "stats.safetensors"
        make_file(path)
        numpy_cmd = [sys.executable, "-c", NUMPY_SCRIPT, str(path)]
        tlio_cmd = [str(BUILD / "tlio"), "stats", str(path), "--json"]
        timed(tlio_cmd)  # the file into the page cache
        times = {"numpy": [], "tlio": []}
        for _ in range(ROUNDS):
            t, numpy_out = timed(numpy_cmd)
            times["numpy"].append(t)
            t, tlio_out = timed(tlio_cmd)
            times["tlio"].append(t)
        want = {t["name"]: t for t in json.loads(numpy_out)}
        for t in json.loads(tlio_out)["tensors"]:
            w = want[t["name"]]
            assert t["min"] == w["min"] and t["max"] == w["max"] and t["histogram"] == w["histogram"], t["name"]
            assert abs(t["mean"] - w["mean"]) <= 1e-12 * (1 + abs(w["mean"])), t["name"]
            assert abs(t["std"] - w["std"]) <= 1e-12 * w["std"], t["name"]
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"file: {path.stat().st_size / (1 << 20):.0f} MiB, {ROUNDS} rounds, figures equal")
        for k, v in times.items():
            print(f"{k:6s} median {med[k]:.3f} s  runs {', '.join(f'{x:.3f}' for x in v)}")
        print(f"tlio / numpy = {med['tlio'] / med['numpy']:.2f}x (goal <= 0.5x)")


if __name__ == "__main__":
    main()
