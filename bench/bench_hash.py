#!/usr/bin/env python3
"""SHA-256 of files (issue 28), files in the page cache, each pair run in turn (A B A B ...),
medians:

  one file of 2 GiB:   hashlib.file_digest(f, "sha256") (OpenSSL, in this process)  the baseline
                       tlio hash FILE (a whole process: start-up included)          target <= 1.1x
  4 shards of 512 MiB: hashlib over them one after another                          the baseline
                       tlio hash FOLDER (files hashed in parallel over the cores)   target <= 0.65x

Both sides use OpenSSL's SHA-256 (SHA-NI where the CPU has it); each side's digests are
checked against the other's.
Usage (after a build): /usr/bin/python3 bench/bench_hash.py [BUILD] [DIR] [ROUNDS]
"""
import hashlib
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20


def write_file(path, size):
    block = os.urandom(16 * MiB)
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
    with open(path, "rb") as f:  # into the page cache
        while f.read(64 * MiB):
            pass


def hashlib_digests(paths):
    out = {}
    for p in paths:
        with open(p, "rb") as f:
            out[str(p)] = hashlib.file_digest(f, "sha256").hexdigest()
    return out


def tlio_digests(cli, target):
    out = subprocess.run([str(cli), "hash", str(target)], check=True, capture_output=True, text=True).stdout
    return {line[66:]: line[:64] for line in out.splitlines()}


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-hash-", dir=sys.argv[2] if len(sys.argv) > 2 else None))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    cli = build / "tlio"
    try:
        big = scratch / "big.bin"
        write_file(big, 2048 * MiB)
        shards = scratch / "shards"
        shards.mkdir()
        parts = [shards / f"model-{i + 1:05}-of-00004.safetensors" for i in range(4)]
        for p in parts:
            write_file(p, 512 * MiB)
        cases = [("one file of 2 GiB", [big], big), ("4 shards of 512 MiB", parts, shards)]
        print(f"{os.cpu_count()} cores, {rounds} rounds in turn, medians")
        for label, files, target in cases:
            base, ours = [], []
            for _ in range(rounds):
                t, want = timed(lambda: hashlib_digests(files))
                base.append(t)
                t, got = timed(lambda: tlio_digests(cli, target))
                ours.append(t)
                if got != want:
                    raise SystemExit(f"{label}: digests differ: {got} vs {want}")
            b, o = statistics.median(base), statistics.median(ours)
            print(f"{label}: hashlib {b:.3f} s ({len(files) * os.path.getsize(files[0]) / b / 1e9:.2f} GB/s), "
                  f"tlio hash {o:.3f} s: {o / b:.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
