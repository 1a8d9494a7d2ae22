#!/usr/bin/env python3
"""Golden tests of the tlio command line.

Each case in cases/ is NAME.cmd (command lines run in order in one scratch folder; `tlio` is
the binary under test, `DATA` the test data folder, `TMP` a scratch folder of the case) with
NAME.exit (the last command's exit code), NAME.stdout and NAME.stderr (all commands' output)
holding what it must produce.
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
    lines = [l for l in cmd_file.read_text().splitlines() if l.strip()]
    got = {"exit": "", "stdout": "", "stderr": ""}
    with tempfile.TemporaryDirectory(prefix=f"tlio-cli-{name}-") as tmp:
        # Run inside a folder where DATA and TMP are links, so printed paths are stable.
        work = pathlib.Path(tmp) / "work"
        work.mkdir()
        os.symlink(data, work / "DATA")
        (work / "TMP").mkdir()
        for line in lines:
            argv = [tlio if w == "tlio" else w for w in shlex.split(line)]
            proc = subprocess.run(argv, cwd=work, capture_output=True, timeout=120)
            # Output may hold any bytes (bigram generate): keep invalid UTF-8 visible as \xNN.
            got["stdout"] += proc.stdout.decode("utf-8", "backslashreplace")
            got["stderr"] += proc.stderr.decode("utf-8", "backslashreplace")
            got["exit"] = f"{proc.returncode}\n"
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
