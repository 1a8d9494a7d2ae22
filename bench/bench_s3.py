#!/usr/bin/env python3
"""Object stores (issue 26): s3rver (scripts/npm, installed into build/npm) on 127.0.0.1, the
benchmark file of make_bench_file (1 GiB), each pair run in turn (A B A B ...), medians:

  download: boto3 download_file (its multi-threaded transfer manager) + fsync   the baseline
            tlio convert s3://bucket/big.safetensors OUT (OUT fsynced, renamed) target <= 1.0x
  upload:   boto3 upload_file                                                   the baseline
            tlio convert LOCAL s3://bucket/out.safetensors                      target <= 1.0x

Both sides sign every request (s3rver checks none), both hash what they send (boto3: the
payload's SHA-256 over http, as botocore signs it; tlio: each part's SHA-256).
Usage (after a build): /usr/bin/python3 bench/bench_s3.py [BUILD] [DIR] [ROUNDS]
"""
import contextlib
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python" / "tests"))
from s3_servers import plain_s3rver  # noqa: E402

import boto3  # noqa: E402
import botocore.config  # noqa: E402

KEY, SECRET = "S3RVER", "S3RVER"


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-s3-", dir=sys.argv[2] if len(sys.argv) > 2 else None))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    big, out, boto_out = scratch / "big.safetensors", scratch / "out.safetensors", scratch / "boto.out"
    servers = contextlib.ExitStack()
    try:
        endpoint = servers.enter_context(plain_s3rver(scratch / "s3rver"))
        env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": endpoint}
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name="us-east-1", config=botocore.config.Config(s3={"addressing_style": "path"}))
        subprocess.run([str(build / "bench" / "make_bench_file"), str(big)], check=True, stdout=subprocess.DEVNULL)
        s3.upload_file(str(big), "bucket", "big.safetensors")
        size = big.stat().st_size

        def boto_download():
            s3.download_file("bucket", "big.safetensors", str(boto_out))
            fd = os.open(boto_out, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

        def tlio(*args):
            subprocess.run([str(build / "tlio"), *args], check=True, stdout=subprocess.DEVNULL, env=env)

        pairs = {
            "download": {"boto3 download_file + fsync": boto_download,
                         "tlio convert s3://... OUT": lambda: tlio("convert", "s3://bucket/big.safetensors", str(out))},
            "upload": {"boto3 upload_file": lambda: s3.upload_file(str(big), "bucket", "boto-up.safetensors"),
                       "tlio convert LOCAL s3://...": lambda: tlio("convert", str(big), "s3://bucket/tlio-up.safetensors")},
        }
        print(f"file: {size / 2**30:.3f} GiB, s3rver on 127.0.0.1, {rounds} rounds in turn")
        for what, cases in pairs.items():
            times = {k: [] for k in cases}
            for _ in range(rounds):
                for name, run in cases.items():
                    for p in (out, boto_out):
                        p.unlink(missing_ok=True)
                    subprocess.run(["sync"], check=True)
                    t0 = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - t0)
            base = statistics.median(next(iter(times.values())))
            for name, t in times.items():
                med = statistics.median(t)
                print(f"{what:8s} {name:30s} median {med:6.3f} s ({size / med / 2**20:6.0f} MiB/s) "
                      f"{med / base:5.2f}x   runs: {' '.join(f'{x:.2f}' for x in t)}")
    finally:
        servers.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
