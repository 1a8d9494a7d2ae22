#!/usr/bin/env python3
"""tlio import speed and memory (issue 15), run in turn (A B C A B C ...), medians:

  dd if=CKPT of=OUT bs=16M conv=fsync                     the baseline: copying the bytes
  tlio import CKPT OUT                                     target: <= 1.3x dd, peak RSS <= 128 MiB
  python: torch.load(CKPT) then tlio.torch.save_file       the usual converter's way, for context

CKPT is a 1 GiB state dict (16 Linear(4096, 4096) layers) written by torch.save, in the page
cache. Peak RSS comes from GNU time (%M) for the two commands and from getrusage for Python.
Usage (after a build): PYTHONPATH=build/python /usr/bin/python3 bench/bench_import.py [BUILD] [DIR] [ROUNDS]
"""
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch


def timed(cmd):
    """(seconds, peak RSS in MiB) of a command run under GNU time."""
    t0 = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    return seconds, int(out.stderr.strip().splitlines()[-1]) / 1024


def report(times, rss, baseline):
    """Each command's median, its ratio to the baseline's median, its peak RSS and its runs."""
    base = statistics.median(times[baseline])
    for name in times:
        m = statistics.median(times[name])
        runs = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"  {name:<34} median {m:.3f} s  ratio {m / base:.2f}  peak RSS {max(rss[name]):.0f} MiB  (runs {runs})")


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-import-", dir=sys.argv[2] if len(sys.argv) > 2 else None))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    ckpt, out, dd_out = scratch / "model.pt", scratch / "model.safetensors", scratch / "dd.out"
    torch_out = scratch / "torch.safetensors"
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(16)])
        torch.save(model.state_dict(), ckpt)
        del model
        print(f"checkpoint: {ckpt.stat().st_size / 2**30:.3f} GiB, torch {torch.__version__}")
        subprocess.run(["cat", str(ckpt)], stdout=subprocess.DEVNULL, check=True)  # page cache

        python_converter = [sys.executable, "-c",
                            "import sys, resource, torch, tlio.torch;"
                            "sd = torch.load(sys.argv[1]); tlio.torch.save_file({k: v.contiguous() for k, v in sd.items()}, sys.argv[2]);"
                            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)",
                            str(ckpt), str(torch_out)]
        cases = {
            "dd bs=16M conv=fsync": ["dd", f"if={ckpt}", f"of={dd_out}", "bs=16M", "conv=fsync", "status=none"],
            "tlio import": [str(build / "tlio"), "import", str(ckpt), str(out)],
            "torch.load + save_file (python)": python_converter,
        }
        times = {k: [] for k in cases}
        rss = {k: [] for k in cases}
        for _ in range(rounds):
            for name, cmd in cases.items():
                for p in (out, dd_out, torch_out):
                    p.unlink(missing_ok=True)
                os.sync()
                seconds, peak = timed(cmd)
                times[name].append(seconds)
                rss[name].append(peak)
                if name == "tlio import":
                    check = subprocess.run([str(build / "tlio"), "validate", str(out)], capture_output=True, text=True)
                    assert check.returncode == 0, check.stdout + check.stderr
        report(times, rss, "dd bs=16M conv=fsync")
        print("  every tlio import output passed tlio validate")
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
