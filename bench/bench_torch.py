#!/usr/bin/env python3
"""tlio.torch speed (issue 14), each pair run in turn (A B A B ...) in this one process, medians:

1. load_model into a 1 GiB nn.Module vs model.load_state_dict(torch.load(f)) of the same
   weights saved by torch.save;
2. load_file of the 1 GiB file vs of a 1 MiB file with as many tensors (zero copy: the time
   should not depend on the size);
3. save_file of 1 GiB of torch tensors vs `dd if=F of=OUT bs=16M conv=fsync` of the same bytes.

Usage (after a build): PYTHONPATH=build/python /usr/bin/python3 bench/bench_torch.py [DIR] [ROUNDS]
DIR (default /tmp) gets ~4 GiB of scratch files, removed at the end. Warm page cache.
"""
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import tlio.torch


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def in_turn(rounds, **cases):
    """{name: [seconds per round]}, the cases run one after the other in each round."""
    times = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    return times


def report(title, times, baseline):
    base = statistics.median(times[baseline])
    print(title)
    for name, ts in times.items():
        m = statistics.median(ts)
        runs = ", ".join(f"{t * 1e3:.4g}" for t in ts)
        print(f"  {name:<48} median {m * 1e3:8.4g} ms  ratio {m / base:.3f}  (runs {runs})")


def model_of_1gib():
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(16)])


def main():
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-torch-",
                                            dir=sys.argv[1] if len(sys.argv) > 1 else None))
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    torch_file, tlio_file = scratch / "model.pt", scratch / "model.safetensors"
    small_file = scratch / "small.safetensors"
    try:
        model = model_of_1gib()
        nbytes = sum(t.nelement() * t.element_size() for t in model.state_dict().values())
        print(f"model: {len(model.state_dict())} tensors, {nbytes / 2**30:.3f} GiB, "
              f"torch {torch.__version__}, {torch.get_num_threads()} torch thread(s)")
        torch.save(model.state_dict(), torch_file)
        tlio.torch.save_model(model, tlio_file)
        tlio.torch.save_file({k: torch.zeros(16, 16) for k in model.state_dict()}, small_file)

        # Warm the page cache for both files.
        model.load_state_dict(torch.load(torch_file))
        tlio.torch.load_model(model, tlio_file)
        times = in_turn(
            rounds,
            **{"model.load_state_dict(torch.load(f))":
               lambda: model.load_state_dict(torch.load(torch_file)),
               "tlio.torch.load_model(model, f)": lambda: tlio.torch.load_model(model, tlio_file),
               "model.load_state_dict(tlio.torch.load_file(f))":
               lambda: model.load_state_dict(tlio.torch.load_file(tlio_file))})
        report("1. loading a 1 GiB model (target: tlio <= 0.25x)", times,
               "model.load_state_dict(torch.load(f))")

        times = in_turn(rounds * 3,
                        **{"load_file, 1 GiB": lambda: tlio.torch.load_file(tlio_file),
                           "load_file, 1 MiB, as many tensors": lambda: tlio.torch.load_file(small_file)})
        report("2. load_file (zero copy: independent of the size)", times, "load_file, 1 GiB")

        tensors = {k: v.clone() for k, v in model.state_dict().items()}
        out = scratch / "out.safetensors"
        dd_out = scratch / "dd.out"

        def dd():
            subprocess.run(["dd", f"if={tlio_file}", f"of={dd_out}", "bs=16M", "conv=fsync"],
                           check=True, stderr=subprocess.DEVNULL)

        times = in_turn(rounds, **{"dd bs=16M conv=fsync": dd,
                                   "tlio.torch.save_file": lambda: tlio.torch.save_file(tensors, out)})
        report("3. saving 1 GiB of torch tensors (target: tlio <= 1.2x dd)", times,
               "dd bs=16M conv=fsync")
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
