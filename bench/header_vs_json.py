"""tlio.safe_open (open + validate rules 1-5 + name index) against json.loads of the same header
bytes, in one Python process, the two run in turn; prints medians and their ratio.

Usage: PYTHONPATH=build/python python3 bench/header_vs_json.py FILE [ROUNDS]
(make FILE with: build/bench/make_bench_file --many FILE)"""
import json
import statistics
import struct
import sys
import time

import tlio


def main():
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    text = data[8:8 + n]

    def time_json():
        t0 = time.perf_counter()
        json.loads(text)
        return time.perf_counter() - t0

    def time_tlio():
        t0 = time.perf_counter()
        with tlio.safe_open(path, "np"):
            pass
        return time.perf_counter() - t0

    for _ in range(3):  # warm both
        time_json()
        time_tlio()
    a, b = [], []
    for _ in range(rounds):
        a.append(time_json())
        b.append(time_tlio())
    ja, tb = statistics.median(a), statistics.median(b)
    print(f"json.loads {ja * 1e3:.2f} ms, tlio.safe_open {tb * 1e3:.2f} ms: "
          f"{ja / tb:.1f}x ({n} header bytes, medians of {rounds} rounds in turn)")


if __name__ == "__main__":
    main()
