"""tlio sign and verify of model folders, and their Python side, against model_signing_ref.py
(model-signing v1.0 written from the format): what one side signs the other verifies, both
refuse the same tampered folders naming the cause, ignored paths and a signature kept elsewhere
are honoured, and the private key never shows in any output."""
import base64
import json
import os
import subprocess

import pytest

import tlio
import model_signing_ref as ref
from trust_helpers import CLI, CURVES, DEFAULT_IGNORES, EXAMPLE, MIXED, MODEL_FILES, error_lines, make_model, run, sha
from trust_helpers import keys  # noqa: F401 (a pytest fixture)


# ---------------------------------------------------------------------------------------
# model signatures: tlio and the reference agree

@pytest.mark.parametrize("curve", CURVES)
def test_tlio_signs_what_the_reference_verifies(tmp_path, keys, curve):
    """The bundle is model-signing's, to the byte layout for these ASCII names: compact JSON,
    the statement indented by 2, resources in path order, the git paths and model.sig recorded
    as ignored."""
    priv, pub, _ = keys[curve]
    folder = make_model(tmp_path)
    out = run("sign", folder, "--key", priv)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{folder}: signed ({folder}/model.sig)\n"
    sig = folder / "model.sig"
    assert ref.verify_folder(folder, sig, pub) == []
    assert ref.verify_folder(folder, sig, keys["other"][1]) != []  # (the reference can fail)

    bundle = ref.load_bundle(sig)
    assert sig.read_text() == ref.bundle_json(bundle)
    assert list(bundle) == ["mediaType", "verificationMaterial", "dsseEnvelope"]
    assert bundle["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert bundle["verificationMaterial"] == {"publicKey": {"hint": ref.key_hint(pub)}, "tlogEntries": []}
    env = bundle["dsseEnvelope"]
    assert env["payloadType"] == "application/vnd.in-toto+json"
    assert len(env["signatures"]) == 1 and env["signatures"][0]["keyid"] == ""
    statement = ref.statement_of(bundle)
    assert base64.b64decode(env["payload"]) == ref.statement_bytes(statement)
    assert statement == ref.build_statement("model", {r: sha(folder / r) for r in MODEL_FILES},
                                            ignore_paths=DEFAULT_IGNORES)
    assert statement["subject"][0]["name"] == "model"
    assert statement["predicate"]["serialization"] == {"method": "files", "hash_type": "sha256",
                                                       "allow_symlinks": False, "ignore_paths": DEFAULT_IGNORES}
    assert [r["name"] for r in statement["predicate"]["resources"]] == MODEL_FILES

    # tlio accepts its own
    out = run("verify", folder, "--key", pub)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{folder}: OK (signature: 3 files)\n"


def test_names_past_ascii_are_escaped_as_model_signing_writes_them(tmp_path, keys):
    """A name with an accent and one with an emoji: the statement has them as \\u escapes (a
    surrogate pair for the emoji), byte for byte what the reference writes; a name that is not
    UTF-8 cannot be listed in JSON and is refused by name, nothing written."""
    priv, pub, _ = keys["P-256"]
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "café.txt").write_text("a")
    (folder / "\U0001F600.bin").write_text("b")
    assert run("sign", folder, "--key", priv).returncode == 0
    bundle = ref.load_bundle(folder / "model.sig")
    payload = base64.b64decode(bundle["dsseEnvelope"]["payload"])
    assert b"caf\\u00e9.txt" in payload and b"\\ud83d\\ude00.bin" in payload
    assert payload == ref.statement_bytes(ref.statement_of(bundle))
    assert ref.verify_folder(folder, folder / "model.sig", pub) == []
    assert run("verify", folder, "--key", pub).returncode == 0

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / os.fsdecode(b"x\xff.bin")).write_text("c")
    out = subprocess.run([CLI, "sign", str(bad), "--key", str(priv)], capture_output=True, timeout=60)
    assert out.returncode == 1 and b"x\xff.bin: its name is not UTF-8" in out.stderr
    assert not (bad / "model.sig").exists()


@pytest.mark.parametrize("curve", CURVES)
def test_tlio_verifies_what_the_reference_signs(tmp_path, keys, curve):
    priv, pub, _ = keys[curve]
    folder = make_model(tmp_path)
    ref.sign_folder(folder, priv, folder / "model.sig")
    out = run("verify", folder, "--key", pub)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{folder}: OK (signature: 3 files)\n"
    doc = json.loads(run("verify", "--json", folder, "--key", pub).stdout)
    assert doc == {"ok": True, "results": [{"path": str(folder), "kind": "signature", "ok": True, "sha256": None,
                                            "checked_against": None, "problems": [], "error": None}]}
    assert tlio.verify(folder, key=pub) == {"files": 3, "key_hint": ref.key_hint(pub)}
    # the hint is optional (model-signing 1.0 bundles carry none): the signature decides
    bundle = ref.load_bundle(folder / "model.sig")
    del bundle["verificationMaterial"]["publicKey"]["hint"]
    ref.write_bundle(bundle, folder / "model.sig")
    assert run("verify", folder, "--key", pub).returncode == 0
    assert run("verify", folder, "--key", keys["other"][1]).returncode == 1


def test_a_one_file_model_signed_either_way(tmp_path, keys):
    """A model that is a single file is the resource "."; its signature is named."""
    priv, pub, _ = keys["P-384"]
    model = tmp_path / "model.safetensors"
    model.write_bytes(MIXED.read_bytes())
    ref.sign_folder(model, priv, tmp_path / "ref.sig")
    out = run("verify", model, "--key", pub, "--signature", tmp_path / "ref.sig")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{model}: OK (signature: 1 file)\n"
    assert run("sign", model, "--key", priv, "--signature", tmp_path / "tlio.sig").returncode == 0
    assert ref.verify_folder(model, tmp_path / "tlio.sig", pub) == []
    statement = ref.statement_of(ref.load_bundle(tmp_path / "tlio.sig"))
    assert statement["predicate"]["resources"] == [{"algorithm": "sha256", "digest": sha(MIXED), "name": "."}]
    assert statement["subject"][0]["name"] == "model.safetensors"
    model.write_bytes(MIXED.read_bytes()[:-1] + b"\x01")
    out = run("verify", model, "--key", pub, "--signature", tmp_path / "tlio.sig")
    assert out.returncode == 1 and f"its SHA-256 is {sha(model)}, the signature says {sha(MIXED)}" in out.stderr
    assert ref.verify_folder(model, tmp_path / "tlio.sig", pub) == ["digest mismatch: ."]


# ---------------------------------------------------------------------------------------
# refusals, each naming its cause, by tlio and by the reference

def _flip_a_byte(folder, keys):
    path = folder / "model.safetensors"
    old = sha(path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    return keys["P-256"][1], [["model.safetensors: ", f"its SHA-256 is {sha(path)}", f"the signature says {old}"]], \
        ["digest mismatch: model.safetensors"]


def _add_a_file(folder, keys):
    (folder / "sub" / "extra.bin").write_bytes(b"new")
    return keys["P-256"][1], [["sub/extra.bin: ", "not in the signature"]], ["extra file: sub/extra.bin"]


def _remove_a_file(folder, keys):
    (folder / "sub" / "config.json").unlink()
    return keys["P-256"][1], [["sub/config.json: ", "missing"]], ["missing file: sub/config.json"]


def _file_replaced_by_an_empty_folder(folder, keys):
    (folder / "sub" / "config.json").unlink()
    (folder / "sub" / "config.json").mkdir()
    return keys["P-256"][1], [["sub/config.json: ", "missing"]], ["missing file: sub/config.json"]


def _wrong_key(folder, keys):
    hint, other = ref.key_hint(keys["P-256"][1]), ref.key_hint(keys["other"][1])
    return keys["other"][1], [["key hint", hint, other], ["signature does not verify"]], ["hint", "signature"]


def _changed_hint(folder, keys):
    bundle = ref.load_bundle(folder / "model.sig")
    bundle["verificationMaterial"]["publicKey"]["hint"] = "0" * 64
    ref.write_bundle(bundle, folder / "model.sig")
    return keys["P-256"][1], [["key hint", "0" * 64, ref.key_hint(keys["P-256"][1])]], ["hint"]


def _bad_root_digest_validly_signed(folder, keys):
    bundle = ref.load_bundle(folder / "model.sig")
    statement = ref.statement_of(bundle)
    real = statement["subject"][0]["digest"]["sha256"]
    statement["subject"][0]["digest"]["sha256"] = "f" * 64
    ref.write_bundle(ref.resign(bundle, keys["P-256"][0], statement), folder / "model.sig")
    return keys["P-256"][1], [["subject's digest", "f" * 64, real]], ["root digest"]


def _statement_changed_without_resigning(folder, keys):
    """The file changed and the statement says so, consistently, but the old signature is kept."""
    (folder / "sub" / "config.json").write_text('{"hidden": 5}\n')
    bundle = ref.load_bundle(folder / "model.sig")
    statement = ref.statement_of(bundle)
    for r in statement["predicate"]["resources"]:
        if r["name"] == "sub/config.json":
            r["digest"] = sha(folder / "sub" / "config.json")
    statement["subject"][0]["digest"]["sha256"] = ref.root_digest(statement["predicate"]["resources"])
    bundle["dsseEnvelope"]["payload"] = base64.b64encode(ref.statement_bytes(statement)).decode()
    ref.write_bundle(bundle, folder / "model.sig")
    return keys["P-256"][1], [["signature does not verify"]], ["signature"]


TAMPERINGS = [_flip_a_byte, _add_a_file, _remove_a_file, _file_replaced_by_an_empty_folder, _wrong_key, _changed_hint, _bad_root_digest_validly_signed,
              _statement_changed_without_resigning]


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=[t.__name__.strip("_") for t in TAMPERINGS])
def test_a_tampered_model_is_refused_naming_the_cause(tmp_path, keys, tamper):
    """Exactly the expected problems, each naming its file or digests, on stderr (one line
    each), in --json and in VerificationError.problems; the reference finds the same kinds."""
    folder = make_model(tmp_path)
    assert run("sign", folder, "--key", keys["P-256"][0]).returncode == 0
    pub, wanted, ref_kinds = tamper(folder, keys)

    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub)
    problems = e.value.problems
    assert len(problems) == len(wanted), problems
    for problem, parts in zip(problems, wanted):
        for part in parts:
            assert part in problem, (part, problem)
        assert problem in str(e.value)
    if wanted[0][0].endswith(": "):  # a file's problem starts with its name
        assert problems[0].startswith(wanted[0][0])

    out = run("verify", folder, "--key", pub)
    assert out.returncode == 1 and out.stdout == ""
    assert error_lines(out) == [f"tlio: {folder}: {p}" for p in problems]
    doc = json.loads(run("verify", "--json", folder, "--key", pub).stdout)
    assert doc["ok"] is False and doc["results"][0]["ok"] is False
    assert doc["results"][0]["problems"] == problems and doc["results"][0]["error"] is None

    found = ref.verify_folder(folder, folder / "model.sig", pub)
    assert [p if p.startswith(("digest", "extra", "missing")) else p.split(":")[0] for p in found] == ref_kinds, found


# ---------------------------------------------------------------------------------------
# what is left out, and where the signature is

def test_ignored_paths_may_change_without_failing_verify(tmp_path, keys):
    priv, pub, _ = keys["P-521"]
    folder = make_model(tmp_path)
    (folder / "notes.txt").write_text("draft")
    (folder / "logs").mkdir()
    (folder / "logs" / "run1.txt").write_text("loss 3")
    assert tlio.sign(folder, key=priv, ignore_paths=["notes.txt", "logs/"]) == f"{folder}/model.sig"
    statement = ref.statement_of(ref.load_bundle(folder / "model.sig"))
    assert statement["predicate"]["serialization"]["ignore_paths"] == sorted(DEFAULT_IGNORES + ["logs", "notes.txt"])
    assert [r["name"] for r in statement["predicate"]["resources"]] == MODEL_FILES
    (folder / "notes.txt").write_text("rewritten")
    (folder / "logs" / "run2.txt").write_text("loss 2")
    (folder / ".gitattributes").write_text("changed\n")
    assert tlio.verify(folder, key=pub)["files"] == 3
    assert run("verify", folder, "--key", pub).returncode == 0
    assert ref.verify_folder(folder, folder / "model.sig", pub) == []
    (folder / "sub" / "config.json").write_text("{}")  # not ignored: still caught
    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub)
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith("sub/config.json: ")

    # --ignore-paths on verify: a path the signature did not leave out
    other = make_model(tmp_path, "other")
    ref.sign_folder(other, priv, other / "model.sig")
    (other / "cache").mkdir()
    (other / "cache" / "x.bin").write_bytes(b"x")
    out = run("verify", other, "--key", pub)
    assert out.returncode == 1 and error_lines(out) == [f"tlio: {other}: cache/x.bin: not in the signature (a file added)"]
    assert run("verify", other, "--key", pub, "--ignore-paths", "cache").returncode == 0
    assert tlio.verify(other, key=pub, ignore_paths=["cache"])["files"] == 3


def test_an_absolute_ignore_path_inside_the_folder_is_left_out(tmp_path, keys):
    """As model-signing (and the reference) take it: FOLDER/notes.txt given as an absolute path
    is that file, left out and recorded, not dropped without a word."""
    priv, pub, _ = keys["P-256"]
    folder = make_model(tmp_path)
    (folder / "notes.txt").write_text("draft")
    theirs = ref.statement_of(ref.sign_folder(folder, priv, tmp_path / "ref.sig", ignore_paths=[folder / "notes.txt"]))
    out = run("sign", folder, "--key", priv, "--ignore-paths", folder / "notes.txt")
    assert out.returncode == 0, out.stderr
    ours = ref.statement_of(ref.load_bundle(folder / "model.sig"))
    assert [r["name"] for r in theirs["predicate"]["resources"]] == MODEL_FILES
    assert [r["name"] for r in ours["predicate"]["resources"]] == MODEL_FILES
    assert ours["predicate"]["serialization"]["ignore_paths"] == sorted(DEFAULT_IGNORES + ["notes.txt"])


def test_a_signature_kept_outside_the_folder_lists_every_file(tmp_path, keys):
    """Then nothing of the folder is the signature: even a file named model.sig is signed."""
    priv, pub, _ = keys["P-256"]
    folder = make_model(tmp_path)
    (folder / "model.sig").write_text("an old signature, part of the model now")
    outside = tmp_path / "sigs" / "model.bundle"
    outside.parent.mkdir()
    out = run("sign", folder, "--key", priv, "--signature", outside)
    assert out.returncode == 0 and out.stdout == f"{folder}: signed ({outside})\n"
    statement = ref.statement_of(ref.load_bundle(outside))
    assert [r["name"] for r in statement["predicate"]["resources"]] == ["model.safetensors", "model.sig"] + MODEL_FILES[1:]
    assert statement["predicate"]["serialization"]["ignore_paths"] == sorted(ref.GIT_PATHS)
    assert ref.verify_folder(folder, outside, pub) == []
    assert run("verify", folder, "--key", pub, "--signature", outside).stdout == f"{folder}: OK (signature: 4 files)\n"
    assert tlio.verify(folder, key=pub, signature=outside)["files"] == 4
    (folder / "model.sig").write_text("changed")
    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub, signature=outside)
    assert [p.split(":")[0] for p in e.value.problems] == ["model.sig"]
    # the reference's signature outside the folder: the same statement
    ref.sign_folder(folder, priv, tmp_path / "sigs" / "ref.bundle")
    assert run("verify", folder, "--key", pub, "--signature", tmp_path / "sigs" / "ref.bundle").returncode == 0


def test_verify_refuses_mixed_up_arguments_before_reading_anything(tmp_path, keys):
    folder = make_model(tmp_path)
    out = run("verify", folder)
    assert out.returncode == 2 and "--key" in out.stderr and str(folder) in out.stderr and out.stdout == ""
    out = run("verify", folder / "model.safetensors", "--key", keys["P-256"][1])
    assert out.returncode == 2 and "--signature" in out.stderr
    out = run("verify", folder, "--key", keys["P-256"][1], "--sha256", sha(EXAMPLE))
    assert out.returncode == 2 and "--sha256" in out.stderr
    out = run("verify", folder, "--key", keys["P-256"][1])  # no model.sig there
    assert out.returncode == 1 and f"{folder}/model.sig" in out.stderr
    with pytest.raises(OSError):
        tlio.verify(folder, key=keys["P-256"][1])


# ---------------------------------------------------------------------------------------
# secrets

def test_the_private_key_never_appears_in_any_output(tmp_path, keys):
    """Not on success, nor when the private key is given where a public one goes (or the
    reverse), in text or JSON, from the CLI or in Python's exceptions."""
    priv, pub, pem = keys["P-256"]
    text = pem.decode()
    body = [line for line in text.splitlines() if not line.startswith("-----") and len(line) >= 16]
    scalar = format(ref._load_private(pem).private_numbers().private_value, "x")
    secrets = [text, *body, scalar]
    assert len(body) >= 2

    def absent(s):
        for secret in secrets:
            assert secret not in s

    folder = make_model(tmp_path)
    outs = [run("sign", folder, "--key", priv), run("sign", "--json", folder, "--key", priv),
            run("verify", folder, "--key", pub), run("verify", "--json", folder, "--key", pub),
            run("verify", folder, "--key", priv), run("verify", "--json", folder, "--key", priv),
            run("sign", folder, "--key", pub), run("sign", "--json", folder, "--key", pub),
            run("hash", priv), run("hash", "--json", priv), run("verify", priv),
            run("verify", priv, "--key", priv, "--signature", folder / "model.sig")]
    assert outs[0].returncode == 0 and outs[2].returncode == 0
    assert outs[4].returncode == 0  # a private key verifies by its public half
    assert outs[6].returncode == 1 and "private key" in outs[6].stderr
    for out in outs:
        absent(out.stdout)
        absent(out.stderr)
    absent((folder / "model.sig").read_text())
    for call in (lambda: tlio.verify(folder, key=priv, signature=priv), lambda: tlio.sign(folder, key=pub),
                 lambda: tlio.load_file(priv)):
        with pytest.raises(Exception) as e:
            call()
        absent(str(e.value))
        absent(repr(e.value))


def test_a_link_or_fifo_put_in_a_signed_folder_is_a_verification_problem(tmp_path, keys):
    """Tampering that adds what is not a regular file fails as any tampering does (a
    VerificationError naming it), not as an error of another kind; a name that is not UTF-8
    reaches Python as os.fsdecode spells it."""
    priv, pub, _ = keys["P-256"]
    folder = make_model(tmp_path)
    assert run("sign", folder, "--key", priv).returncode == 0
    os.mkfifo(folder / "sub" / "fifo")
    (folder / "link").symlink_to("model.safetensors")
    (folder / os.fsdecode(b"odd\xff")).write_text("x")
    with pytest.raises(tlio.VerificationError) as e:
        tlio.verify(folder, key=pub)
    problems = e.value.problems
    assert any(p.startswith("sub/fifo: is not a regular file") for p in problems), problems
    assert any(p.startswith("link: is a symbolic link") for p in problems), problems
    assert os.fsdecode(b"odd\xff") + ": not in the signature (a file added)" in problems
