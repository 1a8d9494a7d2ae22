#!/usr/bin/env python3
"""tlio against the loaders people use today (issue 44): PyPI's safetensors, fastsafetensors (CPU
mode, nogds=True) and run:ai's model streamer. Every workload is run for each side in turn (tlio,
safetensors, fastsafetensors, runai, then the next round starting one side later), each run in
a fresh process whose imports are not timed, medians of ROUNDS:

  torch        whole-file load of a 2 GiB BF16 file (128 2-D tensors of 16 MiB) to torch:
               tlio.torch.load_file, safetensors.torch.load_file, fastsafe_open(nogds=True,
               device="cpu") and get_tensor of every key (its README's way), run:ai's
               SafetensorsStreamer.stream_file + get_tensors (its defaults); then one value of
               every 4 KiB page of every tensor is read, so that the loaders that map the file
               (tlio, safetensors) pay for their page faults as the copying ones pay for copies
  pread        the same through backend="pread" (tlio and safetensors have one)
  direct       the same through tlio's backend="direct" (O_DIRECT reads, 16 in flight through
               io_uring; the peers that read with O_DIRECT, fastsafetensors and runai, do so in
               their torch row)
  plan         the same through a read plan past the page cache, tlio.torch.load_sharded(F,
               None, backend="direct") (what load_distributed does on each rank)
  numpy        whole-file load to numpy (tlio.numpy / safetensors.numpy) of an F16 file of the same
               values (numpy has no BF16), pages read the same way
  get_tensor   safe_open(F, "pt") and get_tensor of every key (fastsafetensors: fastsafe_open)
  rows, cols   get_slice(k)[r/4:r/2] and get_slice(k)[:, c/4:c/2] of every tensor
  save         save of the 2 GiB of torch tensors, durable on every side: tlio.torch.save_file
               (fsyncs the file and its folder itself), safetensors.torch.save_file then fsync of
               the file and the folder, fastsafetensors' ParallelSaver(num_shards=1, fsync=True)
  header       open of the 50,000-tensor file of build/bench/make_bench_file --many and its keys
               (fastsafetensors: SafeTensorsMetadata.from_file; run:ai has no such call)
  dd           dd if=F of=/dev/null iflag=direct bs=8M: the storage's limit, baseline of cold rows

Warm: the parent drops the file's pages and reads it once with read(2) just before the run. Cold:
the child drops the file's pages with posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) after its
imports (no root needed; the bench checks with fincore that the pages are gone), and each cold
run follows an unmeasured cold run of the same side (on this VM a cold read depends on how the run
before read the file, so no side inherits another's effect). Every run's
result is checked against SHA-256s of three tensors (or slices, or the key list) that the bench
computes from the bytes it wrote, so a fast wrong answer shows as WRONG. A peer that cannot
install or run is listed with its error.

Usage (after a build): /usr/bin/python3 bench/bench_peers.py [BUILD] [DIR] [ROUNDS] [ROW,...]
(ROW: the first column's names, e.g. save,torch-cold; all rows by default, and then
bench/bench_own_ratios.py reruns this repository's own ratios against their last record).
Makes BUILD/bench-venv (--system-site-packages: Debian's torch and numpy) with the pins of
scripts/pypi/bench-peers.txt, or reuses it when they are unchanged. DIR (default /var/tmp) gets
~6.3 GiB of scratch files, removed at the end. Prints a markdown table.
"""
import hashlib
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

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
DIR = sys.argv[2] if len(sys.argv) > 2 else "/var/tmp"
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
VENV = BUILD / "bench-venv"
PINS = ROOT / "scripts" / "pypi" / "bench-peers.txt"
DEBIAN_SITE = "/usr/lib/python3/dist-packages/"
PEERS = {"safetensors": "safetensors", "fastsafetensors": "fastsafetensors",
         "runai": "runai-model-streamer"}  # side: its distribution
SIDES = ["tlio", *PEERS]
ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
COUNT, ELEMS = 128, 1 << 23  # 128 tensors of 8 Mi 2-byte values: 2 GiB

# (key, label, child workload, file, warm/cold/-, sides that have the API)
ROWS = [
    ("torch-warm", "whole file to torch, warm", "torch", "bf16", "warm", SIDES),
    ("torch-cold", "whole file to torch, cold", "torch", "bf16", "cold", SIDES),
    ("pread-warm", 'whole file to torch, backend="pread", warm', "pread", "bf16", "warm",
     ["tlio", "safetensors"]),
    ("pread-cold", 'whole file to torch, backend="pread", cold', "pread", "bf16", "cold",
     ["tlio", "safetensors"]),
    ("direct-warm", 'whole file to torch, tlio backend="direct", warm', "direct", "bf16", "warm", ["tlio"]),
    ("direct-cold", 'whole file to torch, tlio backend="direct", cold', "direct", "bf16", "cold", ["tlio"]),
    ("plan-cold", 'read plan of the whole file to torch, backend="direct", cold', "plan", "bf16", "cold",
     ["tlio"]),
    ("numpy-warm", "whole file to numpy (F16), warm", "numpy", "f16", "warm", ["tlio", "safetensors"]),
    ("numpy-cold", "whole file to numpy (F16), cold", "numpy", "f16", "cold", ["tlio", "safetensors"]),
    ("get_tensor", "safe_open + get_tensor of every tensor, warm", "get_tensor", "bf16", "warm",
     ["tlio", "safetensors", "fastsafetensors"]),
    ("rows", "get_slice rows [r/4:r/2] of every tensor, warm", "rows", "bf16", "warm",
     ["tlio", "safetensors"]),
    ("cols", "get_slice columns [:, c/4:c/2] of every tensor, warm", "cols", "bf16", "warm",
     ["tlio", "safetensors"]),
    ("save", "save 2 GiB of torch tensors + fsync", "save", "bf16", "-",
     ["tlio", "safetensors", "fastsafetensors"]),
    ("header", "open a 50,000-tensor file + keys()", "header", "many", "warm",
     ["tlio", "safetensors", "fastsafetensors"]),
]
if len(sys.argv) > 4:
    ROWS = [row for row in ROWS if row[0] in sys.argv[4].split(",")]

CHILD = r'''
import hashlib, json, os, sys, time
side, work, path, mode, out = sys.argv[1:6]
picks = json.loads(sys.argv[6])
import numpy as np
import torch
if side == "tlio":
    import tlio, tlio.numpy, tlio.torch
    safe_open = tlio.safe_open
elif side == "safetensors":
    import safetensors, safetensors.numpy, safetensors.torch
    safe_open = safetensors.safe_open
elif side == "fastsafetensors":
    from fastsafetensors import ParallelSaver, SafeTensorsMetadata, fastsafe_open
    from fastsafetensors.frameworks import get_framework_op
elif side == "runai":
    from runai_model_streamer import SafetensorsStreamer


def raw_torch(p):
    """{name: tensor} read with numpy alone (owned memory): save's input and its output's check."""
    with open(p, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    d = {}
    for k, v in header.items():
        a, b = v["data_offsets"]
        arr = np.fromfile(p, dtype=np.int16, count=(b - a) // 2, offset=8 + n + a)
        d[k] = torch.from_numpy(arr).view(torch.bfloat16).reshape(v["shape"])
    return d


def raw(t):
    if isinstance(t, np.ndarray):
        return np.ascontiguousarray(t).view(np.uint8).tobytes()
    return t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def touch(values):
    s = 0.0
    for t in values:
        if isinstance(t, np.ndarray):
            s += float(t.reshape(-1)[::4096 // t.itemsize].sum(dtype=np.float64))
        else:
            s += float(t.reshape(-1)[::4096 // t.element_size()].double().sum())
    return s


def fsync_path(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


if work == "save":
    src = raw_torch(path)
if mode == "cold":
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

t0 = time.perf_counter()
d = None
if work in ("torch", "pread", "direct") and side in ("tlio", "safetensors"):
    lib = tlio.torch if side == "tlio" else safetensors.torch
    d = lib.load_file(path, backend=work) if work in ("pread", "direct") else lib.load_file(path)
elif work == "plan" and side == "tlio":
    d = tlio.torch.load_sharded(path, None, backend="direct")
elif work in ("torch", "get_tensor") and side == "fastsafetensors":
    with fastsafe_open(filenames=[path], nogds=True, device="cpu") as f:
        d = {k: f.get_tensor(k) for k in f.keys()}
elif work == "torch" and side == "runai":
    with SafetensorsStreamer() as s:
        s.stream_file(path)
        d = dict(s.get_tensors())
elif work == "numpy":
    d = (tlio.numpy if side == "tlio" else safetensors.numpy).load_file(path)
elif work == "get_tensor":
    with safe_open(path, "pt") as f:
        d = {k: f.get_tensor(k) for k in f.keys()}
elif work in ("rows", "cols"):
    d = {}
    with safe_open(path, "pt") as f:
        for k in f.keys():
            s = f.get_slice(k)
            r, c = s.get_shape()
            d[k] = s[r // 4:r // 2] if work == "rows" else s[:, c // 4:c // 2]
elif work == "save":
    target = os.path.join(out, "saved.safetensors")
    if side == "tlio":
        tlio.torch.save_file(src, target)
    elif side == "safetensors":
        safetensors.torch.save_file(src, target)
        fsync_path(target)
        fsync_path(out)
    else:
        target = ParallelSaver(num_shards=1, fsync=True).save(src, os.path.join(out, "saved"))[0]
elif work == "header":
    if side == "fastsafetensors":
        keys = list(SafeTensorsMetadata.from_file(path, get_framework_op("pytorch")).tensors)
    else:
        with safe_open(path, "pt") as f:
            keys = f.keys()
else:
    raise SystemExit(f"no {work} for {side}")
t_call = time.perf_counter()
if d is not None:
    touch(d.values())
t1 = time.perf_counter()

if work == "header":
    digests = {"keys": hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()}
else:
    if work == "save":
        d = raw_torch(target)
        os.unlink(target)
    digests = {k: hashlib.sha256(raw(d[k])).hexdigest() for k in picks}
print(json.dumps({"s": t1 - t0, "call": t_call - t0, "digests": digests}))
'''


class Failed(Exception):
    pass


def short(text, n=100):
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


def pins():
    lines = (line.split("#")[0].strip() for line in PINS.read_text().splitlines())
    return [line for line in lines if line]


def ensure_venv():
    """The venv's python, {distribution: why it did not install}, torch's version. The venv is
    reused when its copy of the pins file equals scripts/pypi/bench-peers.txt."""
    py, stamp = VENV / "bin" / "python", VENV / "bench-peers.txt"
    failed_file = VENV / "bench-peers-failed.json"
    if not (py.exists() and stamp.exists() and failed_file.exists()
            and stamp.read_text() == PINS.read_text()):
        if not py.exists():
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(VENV)],
                           check=True)
        failed = {}
        for pin in pins():  # one by one, so that one that fails leaves the others installed
            r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--quiet",
                                "--disable-pip-version-check", pin], capture_output=True, text=True)
            if r.returncode:
                failed[pin.split("==")[0]] = short(last_line(r.stderr))
        failed_file.write_text(json.dumps(failed))
        stamp.write_text(PINS.read_text())
    r = subprocess.run([str(py), "-c", "import torch; print(torch.__version__, torch.__file__)"],
                       capture_output=True, text=True, check=True)
    version, where = r.stdout.split()
    if not where.startswith(DEBIAN_SITE):
        sys.exit(f"the bench venv's torch is {version} from {where}, not Debian's: remove {VENV}")
    return py, json.loads(failed_file.read_text()), version


def versions(py):
    code = ("import importlib.metadata as m, json, sys\nout = {}\nfor d in sys.argv[1:]:\n"
            "    try: out[d] = m.version(d)\n    except m.PackageNotFoundError: out[d] = None\n"
            "print(json.dumps(out))")
    r = subprocess.run([str(py), "-c", code, *PEERS.values(), "numpy"], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


def write_file(path, dtype, pool):
    """COUNT 2-D tensors of ELEMS values, each a different window of `pool` (uint16 codes).
    Returns {name: (shape, codes)} of every tensor."""
    header, tensors, offset = {}, {}, 0
    for i in range(COUNT):
        shape = [4096, 2048] if i % 2 == 0 else [2048, 4096]
        name = f"model.layers.{i // 4}.{('q_proj', 'k_proj', 'up_proj', 'down_proj')[i % 4]}.weight"
        start = (i * 397_711) % (len(pool) - ELEMS)
        tensors[name] = (shape, pool[start:start + ELEMS])
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + 2 * ELEMS]}
        offset += 2 * ELEMS
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for _, codes in tensors.values():
            f.write(codes.tobytes())
        f.flush()
        os.fsync(f.fileno())  # clean pages: POSIX_FADV_DONTNEED drops only those
    return tensors


def expected(tensors, picks):
    """{workload: {name: sha256}} of the picked tensors, as the children compute them."""
    out = {"full": {}, "rows": {}, "cols": {}}
    for k in picks:
        (r, c), codes = tensors[k]
        a = codes.reshape(r, c)
        out["full"][k] = hashlib.sha256(a.tobytes()).hexdigest()
        out["rows"][k] = hashlib.sha256(np.ascontiguousarray(a[r // 4:r // 2]).tobytes()).hexdigest()
        out["cols"][k] = hashlib.sha256(np.ascontiguousarray(a[:, c // 4:c // 2]).tobytes()).hexdigest()
    return out


def prime(path):
    """Drops the file's pages, then reads it with read(2), so that every warm run starts from the
    same page-cache state: pages left by safetensors.numpy's cold load made a later mapped load
    by tlio 9x slower (72 ms against 8 ms) than pages read by read(2)."""
    drop(path)
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(8 << 20)
        while f.readinto(buf):
            pass


def drop(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def resident(path):
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                       capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def run_child(py, side, work, path, mode, out, picks):
    if mode == "warm":
        prime(path)
    try:
        r = subprocess.run([str(py), "-c", CHILD, side, work, str(path), mode, str(out),
                            json.dumps(picks)], capture_output=True, text=True, env=ENV, timeout=900)
    except subprocess.TimeoutExpired:
        raise Failed("timed out after 900 s")
    if r.returncode:
        raise Failed(short(last_line(r.stderr)))
    return json.loads(last_line(r.stdout))


def run_dd(path):
    drop(path)
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "iflag=direct", "bs=8M"], check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def fmt(s):
    return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s:.3f} s"


def fmt_runs(ts):
    return ", ".join(f"{t * 1e3:.1f}" if t < 0.1 else f"{t:.2f}" for t in ts)


def machine():
    model = cores = "?"
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Model name":
            model = value.strip()
        elif key.strip() == "CPU(s)":
            cores = value.strip()
    mem = next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", DIR], capture_output=True,
                        text=True).stdout.strip() or "?"
    return (f"{model}, {cores} CPUs, {int(mem) / 2**20:.0f} GiB, Linux {os.uname().release}, "
            f"{fs} at {DIR}")


def main():
    py, install_failed, torch_version = ensure_venv()
    ver = versions(py)
    tlio_version = subprocess.run([str(BUILD / "tlio"), "--version"], capture_output=True,
                                  text=True).stdout.strip() or "?"
    unavailable = {}  # side: why it cannot run at all
    for side, dist in PEERS.items():
        if ver.get(dist) is None:
            unavailable[side] = "not installed: " + install_failed.get(dist, "missing from the venv")
    work = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-peers-", dir=DIR))
    try:
        rng = np.random.default_rng(0)
        pool = rng.standard_normal(1 << 25, dtype=np.float32)
        files = {"bf16": work / "bf16.safetensors", "f16": work / "f16.safetensors",
                 "many": work / "many.safetensors"}
        tensors = write_file(files["bf16"], "BF16", (pool.view(np.uint32) >> 16).astype(np.uint16))
        tensors16 = write_file(files["f16"], "F16", pool.astype(np.float16).view(np.uint16))
        del pool
        names = sorted(tensors)
        picks = [names[0], names[len(names) // 2], names[-1]]
        want = expected(tensors, picks)
        want16 = expected(tensors16, picks)["full"]
        del tensors, tensors16
        maker = BUILD / "bench" / "make_bench_file"
        if maker.exists():
            subprocess.run([str(maker), "--many", str(files["many"])], check=True)
            made_by = "build/bench/make_bench_file --many"
        else:  # the same file: 50,000 F32 [4] tensors of zeros
            header, body = {}, 0
            for i in range(50_000):
                header[f"layers.{i}.w"] = {"dtype": "F32", "shape": [4],
                                           "data_offsets": [body, body + 16]}
                body += 16
            text = json.dumps(header, separators=(",", ":")).encode()
            text += b" " * (-len(text) % 8)
            files["many"].write_bytes(len(text).to_bytes(8, "little") + text + bytes(body))
            made_by = "this script"
        with open(files["many"], "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            many_keys = [k for k in json.loads(f.read(n)) if k != "__metadata__"]
        want_keys = {"keys": hashlib.sha256("\n".join(sorted(many_keys)).encode()).hexdigest()}
        out = work / "out"
        out.mkdir()

        prime(files["bf16"])
        drop(files["bf16"])
        left = resident(files["bf16"])

        times = {(row[0], side): [] for row in ROWS for side in SIDES}
        calls = {(row[0], side): [] for row in ROWS for side in SIDES}
        failed, wrong, dd_times = {}, {}, []
        started = time.perf_counter()
        for rnd in range(ROUNDS):
            dd_done = False
            for key, label, job, file_key, mode, sides in ROWS:
                if mode == "cold" and not dd_done:  # once a round, before its first cold row
                    dd_times.append(run_dd(files["bf16"]))
                    dd_done = True
                # Rotated each round, and a cold run follows an unmeasured cold run of the same
                # side: on this VM a cold read of a file depends on how the run before read it
                # (tlio's mapped load after safetensors' one took 1.65-2.9 s, after its own
                # 1.1-1.3 s; the first mapped read after an O_DIRECT one ran 2-3x slower too).
                for side in sides[rnd % len(sides):] + sides[:rnd % len(sides)]:
                    if side in unavailable or (key, side) in failed:
                        continue
                    try:
                        if mode == "cold":
                            run_child(py, side, job, files[file_key], mode, out, picks)
                        res = run_child(py, side, job, files[file_key], mode, out, picks)
                    except Failed as e:
                        failed[(key, side)] = str(e)
                        continue
                    times[(key, side)].append(res["s"])
                    calls[(key, side)].append(res["call"])
                    good = {"header": want_keys, "numpy": want16, "rows": want["rows"],
                            "cols": want["cols"]}.get(job, want["full"])
                    if res["digests"] != good:
                        wrong[(key, side)] = True
            print(f"round {rnd + 1}/{ROUNDS} done at {time.perf_counter() - started:.0f} s",
                  file=sys.stderr)

        med = {k: statistics.median(v) for k, v in times.items() if v}
        dd = statistics.median(dd_times) if dd_times else float("nan")
        peer_ver = ", ".join(f"{d} {ver.get(d) or '(not installed)'}" for d in PEERS.values())
        print(f"Machine: {machine()}. Python {sys.version.split()[0]}, torch {torch_version} "
              f"(Debian), numpy {ver.get('numpy')}; {tlio_version}; {peer_ver}. ROUNDS={ROUNDS}, "
              f"{time.perf_counter() - started:.0f} s of runs.")
        print(f"Files: {files['bf16'].stat().st_size / 2**30:.3f} GiB BF16 ({COUNT} tensors of "
              f"[4096, 2048] / [2048, 4096]), the same values in F16, {len(many_keys)}-tensor "
              f"header ({files['many'].stat().st_size / 2**20:.1f} MiB, made by {made_by}).")
        print(f"posix_fadvise(POSIX_FADV_DONTNEED) left {left} bytes of the BF16 file in the page "
              f"cache (fincore). Cold baseline: `dd if=F of=/dev/null iflag=direct bs=8M` median "
              f"{fmt(dd)} (runs {fmt_runs(dd_times)}).\n")
        print("| workload | tlio | safetensors | fastsafetensors | runai | tlio / fastest peer "
              "| tlio / dd |")
        print("|---|---|---|---|---|---|---|")
        for key, label, job, file_key, mode, sides in ROWS:
            cells = []
            for side in SIDES:
                if side not in sides:
                    cells.append("n/a")
                elif side in unavailable:
                    cells.append("not installed")
                elif (key, side) in failed:
                    cells.append("failed")
                else:
                    cells.append(fmt(med[(key, side)]) + (" WRONG" if (key, side) in wrong else ""))
            peers = [med[(key, s)] for s in sides if s != "tlio" and (key, s) in med]
            tl = med.get((key, "tlio"))
            ratio = f"{tl / min(peers):.2f}" if tl and peers else ""
            vs_dd = f"{tl / dd:.2f}" if tl and mode == "cold" else ""
            print(f"| {label} | {' | '.join(cells)} | {ratio} | {vs_dd} |")
        print(f"| baseline: `dd if=F of=/dev/null iflag=direct bs=8M` of the BF16 file, cold | "
              f"{fmt(dd)} | | | | | 1.00 |")
        print("\nRuns (s, or ms where under 0.1 s; in the order run). For the whole-file loads, "
              "the load call alone (before the pages are read) in brackets:")
        for key, label, job, file_key, mode, sides in ROWS:
            parts = []
            for side in sides:
                if times[(key, side)]:
                    extra = ""
                    if job in ("torch", "pread", "direct", "numpy"):
                        extra = f" [call {fmt(statistics.median(calls[(key, side)]))}]"
                    parts.append(f"{side} {fmt_runs(times[(key, side)])}{extra}")
            print(f"- {label}: " + "; ".join(parts))
        problems = [f"- {side}: {why}" for side, why in unavailable.items()]
        problems += [f"- {side}, {key}: failed: {why}" for (key, side), why in failed.items()]
        problems += [f"- {side}, {key}: result differs from the bytes written" for key, side in wrong]
        if problems:
            print("\nCould not run, or wrong:\n" + "\n".join(problems))
        print("\nn/a: the peer has no such call (run:ai streams whole files to torch; fastsafetensors "
              "has no numpy output, get_slice or backend choice).")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
    if len(sys.argv) <= 4:  # a whole run: this repository's own ratios too, against their last record
        print("\n## This repository's own ratios (bench_own_ratios.py)\n", flush=True)
        subprocess.run([sys.executable, str(ROOT / "bench" / "bench_own_ratios.py"), str(BUILD), DIR, str(ROUNDS)],
                       check=True)
