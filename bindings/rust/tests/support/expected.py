"""Expected answers for the Rust tests, as tab-separated lines (names hex-encoded): the C++
reader's (`tlio inspect --json`) and the golden manifests'. Rust has no JSON parser without
crates from a registry, so the manifests are read here.

usage: expected.py hf|bad DATA_DIR TLIO
"""
import json
import os
import subprocess
import sys


def hexs(text):
    return text.encode("utf-8").hex()


def hf(data, tlio):
    folder = os.path.join(data, "hf")
    cases = json.load(open(os.path.join(folder, "MANIFEST.json")))["cases"]
    for case in cases:
        path = os.path.join(folder, case.get("file") or "")
        if case.get("hf_writer") != "ok" or not os.path.isfile(path):
            continue
        inspect = subprocess.run([tlio, "inspect", "--json", path], capture_output=True, check=True)
        cpp = json.loads(inspect.stdout)
        data_of = {t["name"]: t["data_hex"] for t in case["tensors_input_order"]}
        print("F", case["file"], sep="\t")
        for t in cpp["tensors"]:
            print("T", hexs(t["name"]), t["dtype"], ",".join(map(str, t["shape"])),
                  *t["data_offsets"], data_of[t["name"]] or "-", sep="\t")
        for k, v in (cpp["metadata"] or {}).items():
            print("M", hexs(k), hexs(v), sep="\t")
        # What a writer is handed, in the order HF's writer was handed it.
        for k, v in case.get("metadata_pairs") or []:
            print("WM", hexs(k), hexs(v), sep="\t")
        for t in case["tensors_input_order"]:
            print("W", hexs(t["name"]), t["dtype"], ",".join(map(str, t["shape"])),
                  t["data_hex"] or "-", sep="\t")


def bad(data):
    folder = os.path.join(data, "bad")
    for case in json.load(open(os.path.join(folder, "MANIFEST.json")))["cases"]:
        print("B", case["file"], case["tlio_verdict"],
              "-" if case["tlio_rule"] is None else case["tlio_rule"], sep="\t")


if __name__ == "__main__":
    kind, data = sys.argv[1], sys.argv[2]
    hf(data, sys.argv[3]) if kind == "hf" else bad(data)
