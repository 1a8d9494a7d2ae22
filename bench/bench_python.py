#!/usr/bin/env python3
"""Python module speed: load_file is zero-copy (time independent of file size), and copying
every tensor out reaches memcpy bandwidth. Usage (after a build):
  PYTHONPATH=build/python /usr/bin/python3 bench/bench_python.py BIG.safetensors SMALL.safetensors
(bench/run_benchmarks.sh makes both files: 1 GiB and 0.8 MB with the same 200/256-tensor header.)
"""
import sys
import time

import numpy as np

import tlio


def best(fn, repeat=7):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    big, small = sys.argv[1], sys.argv[2]
    for path in (big, small):
        tensors = tlio.load_file(path)  # warm
        nbytes = sum(t.nbytes for t in tensors.values())
        t = best(lambda: tlio.load_file(path))
        print(f"load_file {path}: {len(tensors)} tensors, {nbytes / 1e6:.1f} MB: {t * 1e3:.2f} ms")
    tensors = tlio.load_file(big)
    total = sum(t.nbytes for t in tensors.values())
    with tlio.safe_open(big, "numpy") as f:
        names = f.keys()
        outs = {k: np.ones(f.get_shape(k), dtype=f.get_tensor(k).dtype) for k in names}  # faulted
        into_t = best(lambda: [f.get_tensor(k, out=outs[k]) for k in names], 5)
        copy_t = best(lambda: [f.get_tensor(k, copy=True) for k in names], 5)
        numpy_t = best(lambda: [np.copyto(outs[k], f.get_tensor(k)) for k in names], 5)
    src_buf = np.ones(total, dtype=np.uint8)
    dst_buf = np.zeros(total, dtype=np.uint8)
    memcpy_t = best(lambda: np.copyto(dst_buf, src_buf), 5)
    print(f"memcpy (np.copyto of one {total / 1e9:.1f} GB buffer): {total / memcpy_t / 1e9:.2f} GB/s")
    print(f"get_tensor(out=pre-faulted array) of every tensor: {total / into_t / 1e9:.2f} GB/s "
          f"(ratio {memcpy_t / into_t:.2f})")
    print(f"np.copyto(pre-faulted array, get_tensor view): {total / numpy_t / 1e9:.2f} GB/s "
          f"(ratio {memcpy_t / numpy_t:.2f})")
    print(f"get_tensor(copy=True), fresh arrays (page faults included): {total / copy_t / 1e9:.2f} GB/s "
          f"(ratio {memcpy_t / copy_t:.2f})")


if __name__ == "__main__":
    main()
