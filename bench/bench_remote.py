#!/usr/bin/env python3
"""Remote files (issue 16): Debian's nginx on 127.0.0.1 serving the benchmark files, run in turn
(A B A B ...), medians:

  curl -s -o F URL && sync F      the baseline: fetching the bytes and making them durable
  tlio convert URL OUT            target: <= 1.2x the baseline (OUT is fsynced and renamed)
  the same with TLIO_HTTP_CONNECTIONS=1, for context

and, from nginx's access log, the requests and bytes of `tlio inspect URL` of the 50,000-tensor
file (target: <= 3 requests, <= header + 128 KiB) and of reading one tensor of the 1 GiB file
(target: that tensor and the header, nothing else).
Usage (after a build): PYTHONPATH=build/python /usr/bin/python3 bench/bench_remote.py [BUILD] [DIR] [ROUNDS]
"""
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "tests"))
from http_servers import nginx  # noqa: E402

import tlio  # noqa: E402


def timed(cmd, shell=False, env=None):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, shell=shell, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def log_lines(server):
    return server.log.read_text().splitlines() if server.log.exists() else []


def requests_since(server, before):
    time.sleep(0.2)  # nginx writes its log line after answering
    lines = log_lines(server)[before:]
    return len(lines), sum(int(line.split()[1]) for line in lines)


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-remote-", dir=sys.argv[2] if len(sys.argv) > 2 else None))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    www = scratch / "www"
    www.mkdir()
    big, many = www / "big.safetensors", www / "many.safetensors"
    out, curl_out = scratch / "out.safetensors", scratch / "curl.out"
    try:
        subprocess.run([str(build / "bench" / "make_bench_file"), str(big)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([str(build / "bench" / "make_bench_file"), "--many", str(many)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cat", str(big)], stdout=subprocess.DEVNULL, check=True)  # page cache
        with nginx(www) as server:
            url, many_url = f"{server.url}/big.safetensors", f"{server.url}/many.safetensors"
            print(f"file: {big.stat().st_size / 2**30:.3f} GiB from nginx on 127.0.0.1, {rounds} rounds in turn")
            cases = {
                "curl -o F URL && sync F": (f"curl -s -o {curl_out} {url} && sync {curl_out}", True),
                "tlio convert URL OUT": ([str(build / "tlio"), "convert", url, str(out)], False),
                # For context: what the requests in flight bring.
                "  same, 1 connection": ([str(build / "tlio"), "convert", url, str(out)], False),
            }
            times = {k: [] for k in cases}
            for _ in range(rounds):
                for name, (cmd, shell) in cases.items():
                    for p in (out, curl_out):
                        p.unlink(missing_ok=True)
                    subprocess.run(["sync"], check=True)
                    env = {**os.environ, "TLIO_HTTP_CONNECTIONS": "1"} if "1 connection" in name else None
                    times[name].append(timed(cmd, shell, env))
            base = statistics.median(times["curl -o F URL && sync F"])
            for name, t in times.items():
                med = statistics.median(t)
                print(f"{name:28s} median {med:6.3f} s  ({big.stat().st_size / med / 2**30:5.2f} GiB/s)"
                      f"  {med / base:5.2f}x baseline   runs: {' '.join(f'{x:.2f}' for x in t)}")

            header = 8 + int.from_bytes(many.read_bytes()[:8], "little")
            before = len(log_lines(server))
            subprocess.run([str(build / "tlio"), "inspect", many_url], check=True, stdout=subprocess.DEVNULL)
            n, sent = requests_since(server, before)
            print(f"tlio inspect of the 50,000-tensor file: {n} requests, {sent} bytes "
                  f"(header {header} bytes; limit {header + (128 << 10)})")

            with tlio.safe_open(url, "np") as f:
                name = f.keys()[len(f.keys()) // 2]
                before = len(log_lines(server))
                tensor = f.get_tensor(name)
            n, sent = requests_since(server, before)
            print(f"one tensor ({tensor.nbytes} bytes) of the open 1 GiB file: {n} request(s), {sent} bytes")
            before = len(log_lines(server))
            with tlio.safe_open(url, "np") as f:
                f.get_tensor(name)
            n, sent = requests_since(server, before)
            big_header = 8 + int.from_bytes(big.read_bytes()[:8], "little")
            print(f"opening it and reading that tensor: {n} requests, {sent} bytes "
                  f"(header {big_header} + tensor {tensor.nbytes}; the first request asks for 128 KiB)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
