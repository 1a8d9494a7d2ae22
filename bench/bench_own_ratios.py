#!/usr/bin/env python3
"""This repository's own whole-process ratios, rerun (issue 44: a change that makes one worse by
more than 10% is found and fixed or explained in docs/benchmarks.md). 1 GiB of F32 (256 [1024,
1024] tensors, and the projection-like file for quantization), inputs in the page cache, outputs
fsynced, every job in turn (A B C ...), medians of ROUNDS, each ratio to dd of the same run:

  dd                 dd if=IN of=OUT bs=16M conv=fsync               the baseline
  convert            tlio convert IN OUT
  convert BF16       tlio convert IN OUT --dtype BF16
  quantize int4      tlio quantize PROJ Q --scheme int4-g32-sym, then
  dequantize int4    tlio dequantize Q OUT (timed on its own)
  quantize nf4, dequantize nf4 likewise

The reference ratios are in bench/own_ratios.json (the last full run recorded in
docs/benchmarks.md); a ratio more than 10% above its reference is marked WORSE.

Usage (after a build): /usr/bin/python3 bench/bench_own_ratios.py [BUILD] [DIR] [ROUNDS]
"""
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "bench" / "own_ratios.json"


def timed(args):
    subprocess.run(["sync"], check=True)
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    tlio, maker = str(build / "tlio"), str(build / "bench" / "make_bench_file")
    work = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-own-", dir=sys.argv[2] if len(sys.argv) > 2 else None))
    try:
        big, proj = work / "big.safetensors", work / "proj.safetensors"
        subprocess.run([maker, str(big), "256", "1024", "1024"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([maker, "--proj", str(proj), "256", "1024", "1024"], check=True, stdout=subprocess.DEVNULL)
        for p in (big, proj):  # into the page cache
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        out, quantized = work / "out.safetensors", work / "q.safetensors"
        jobs = {
            "dd": ["dd", f"if={big}", f"of={out}", "bs=16M", "conv=fsync"],
            "convert": [tlio, "convert", str(big), str(out)],
            "convert BF16": [tlio, "convert", str(big), str(out), "--dtype", "BF16"],
        }
        for scheme, short in (("int4-g32-sym", "int4"), ("nf4", "nf4")):
            jobs[f"quantize {short}"] = [tlio, "quantize", str(proj), str(quantized), "--scheme", scheme]
            jobs[f"dequantize {short}"] = [tlio, "dequantize", str(quantized), str(out)]
        times = {k: [] for k in jobs}
        for _ in range(rounds):
            for name, args in jobs.items():
                out.unlink(missing_ok=True)
                if name.startswith("quantize"):
                    quantized.unlink(missing_ok=True)
                times[name].append(timed(args))
        reference = json.loads(REFERENCE.read_text())
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"1 GiB of F32, warm inputs, outputs fsynced, {rounds} rounds in turn; reference: "
              f"{reference['source']}")
        print("| job | median (runs) | ratio to dd | reference | change |")
        print("|---|---|---|---|---|")
        for name, m in med.items():
            runs = ", ".join(f"{t:.2f}" for t in times[name])
            if name == "dd":
                print(f"| dd | {m:.3f} s ({runs}) | 1.00 | | |")
                continue
            ratio, ref = m / med["dd"], reference["ratios"].get(name)
            change = f"{(ratio / ref - 1) * 100:+.0f}%" if ref else ""
            worse = " **WORSE**" if ref and ratio > ref * 1.1 else ""
            print(f"| {name} | {m:.3f} s ({runs}) | {ratio:.2f} | {ref if ref else ''} | {change}{worse} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
