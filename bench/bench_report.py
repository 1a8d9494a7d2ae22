#!/usr/bin/env python3
"""`tlio report` against `tlio stats` (issue 45: a report at the speed of stats), whole processes,
the files in the page cache, each side run in turn (A B A B ...), medians:

  stats:          tlio stats MODEL --json                       (figures, 16-bin histograms)
  report:         tlio report MODEL -o page.html                (the same figures, 64 bins, the page)
  stats x2:       tlio stats MODEL --json; tlio stats SOURCE --json   (each input read once)
  report against: tlio report MODEL --against SOURCE -o page.html     (figures and errors)

MODEL is bench_stats.py's file (16 F32 and 8 BF16 tensors of 1024 x 4096, 320 MiB); SOURCE its
BF16 copy (tlio convert --dtype bf16). The page's size is printed too.
Usage (after a build): /usr/bin/python3 bench/bench_report.py [BUILD] [DIR] [ROUNDS]
"""
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_stats import BUILD, ENV, ROUNDS, make_file  # noqa: E402 - after the path


def timed(*cmds):
    t0 = time.perf_counter()
    outs = [subprocess.run(c, capture_output=True, text=True, env=ENV, check=True).stdout for c in cmds]
    return time.perf_counter() - t0, outs


def main():
    with tempfile.TemporaryDirectory(dir=sys.argv[2] if len(sys.argv) > 2 else None) as tmp:
        tmp = pathlib.Path(tmp)
        model, source, page = tmp / "model.safetensors", tmp / "source.safetensors", tmp / "page.html"
        make_file(model)
        tlio = str(BUILD / "tlio")
        subprocess.run([tlio, "convert", model, source, "--dtype", "bf16"], check=True, capture_output=True)
        sides = {
            "stats": [[tlio, "stats", model, "--json"]],
            "report": [[tlio, "report", model, "-o", page]],
            "stats x2": [[tlio, "stats", model, "--json"], [tlio, "stats", source, "--json"]],
            "report against": [[tlio, "report", model, "--against", source, "-o", page]],
        }
        for cmds in sides.values():
            timed(*cmds)  # the files into the page cache
        times = {k: [] for k in sides}
        for _ in range(ROUNDS):
            for k, cmds in sides.items():
                times[k].append(timed(*cmds)[0])
        stats = {t["name"]: t for t in json.loads(timed(*sides["stats"])[1][0])["tensors"]}
        report = json.loads(timed([tlio, "report", model, "--against", source, "--json", "--bins", "16"])[1][0])
        for t in report["tensors"]:  # the same figures as stats
            s = stats[t["name"]]
            assert (t["min"], t["max"], t["mean"], t["std"], t["histogram"]) == \
                (s["min"], s["max"], s["mean"], s["std"], s["histogram"]), t["name"]
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"model {model.stat().st_size >> 20} MiB, source {source.stat().st_size >> 20} MiB, {ROUNDS} rounds; "
              f"page {page.stat().st_size / 1024:.0f} KiB for {len(report['tensors'])} tensors; figures equal stats'")
        for k, v in times.items():
            print(f"{k:15s} median {med[k]:.3f} s  runs {', '.join(f'{x:.3f}' for x in v)}")
        print(f"report / stats = {med['report'] / med['stats']:.2f}x; "
              f"report against / stats x2 = {med['report against'] / med['stats x2']:.2f}x")


if __name__ == "__main__":
    main()
