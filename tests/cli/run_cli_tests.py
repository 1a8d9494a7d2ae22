#!/usr/bin/env python3
"""Golden tests of the tlio command line.

Each case in cases/ is NAME.cmd (one command line; `tlio` is the binary under test, `$DATA` the
test data folder, `$TMP` a scratch folder of the case) with NAME.exit, NAME.stdout and
NAME.stderr holding what it must produce. Paths under $DATA/$TMP are printed as written.
Run with --regenerate to rewrite the expectations from the current binary (review the diff!).
"""
import argparse
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def run_case(cmd_file, tlio, data, regenerate):
    name = cmd_file.stem
    line = cmd_file.read_text().strip()
    with tempfile.TemporaryDirectory(prefix=f"tlio-cli-{name}-") as tmp:
        words = [w.replace("$DATA", "DATA").replace("$TMP", "TMP") for w in shlex.split(line)]
        # Run inside a folder where DATA and TMP are links, so printed paths are stable.
        work = pathlib.Path(tmp) / "work"
        work.mkdir()
        os.symlink(data, work / "DATA")
        (work / "TMP").mkdir()
        argv = [tlio if w == "tlio" else w for w in words]
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120)
    got = {"exit": f"{proc.returncode}\n", "stdout": proc.stdout, "stderr": proc.stderr}
    failures = []
    for kind, text in got.items():
        path = cmd_file.with_suffix("." + kind)
        if regenerate:
            path.write_text(text)
            continue
        want = path.read_text() if path.exists() else None
        if want != text:
            failures.append(f"{name}.{kind}: expected {want!r}, got {text!r}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tlio", required=True)
    ap.add_argument("--data", default=str(HERE.parent / "data"))
    ap.add_argument("--regenerate", action="store_true")
    args = ap.parse_args()
    tlio = str(pathlib.Path(args.tlio).resolve())
    cases = sorted((HERE / "cases").glob("*.cmd"))
    failures = []
    for c in cases:
        failures += run_case(c, tlio, str(pathlib.Path(args.data).resolve()), args.regenerate)
    for f in failures:
        print("FAIL", f)
    passed = len(cases) - len({f.split(".")[0] for f in failures})
    print(f"{passed} passed, {len(cases) - passed} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
