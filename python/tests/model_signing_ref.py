"""Independent test reference for model signatures in the OpenSSF model-signing v1.0 format
(sigstore/model-transparency): the key-based flow (elliptic-curve PEM keys), serialization
method "files", hash sha256.

Written from the format, not from model-signing's code; standard library plus `cryptography`.
What model-signing writes, and what this module writes too:

* the signature file is a Sigstore bundle v0.3 as compact JSON (no spaces), camelCase keys:
  {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
   "verificationMaterial": {"publicKey": {"hint": HEX}, "tlogEntries": []},
   "dsseEnvelope": {"payload": B64, "payloadType": "application/vnd.in-toto+json",
                    "signatures": [{"sig": B64, "keyid": ""}]}}
  HEX is the SHA-256 of the public key's SubjectPublicKeyInfo PEM text (not of its DER);
  B64 is standard base64 with padding.
* the payload is an in-toto v1 statement, JSON indented by 2 with ASCII escapes; subject is
  the model folder's name with a sha256 over the raw 32-byte digests of the resources, in the
  order listed; resources are the files, by relative POSIX path, sorted by path components.
* the signature is a DER ECDSA signature over the DSSE PAE of the payload, hashed with
  SHA-256 / SHA-384 / SHA-512 for P-256 / P-384 / P-521.

Problems reported by verify_folder() start with one of these words, for tests to match:
"bundle", "media type", "hint", "signature", "payload type", "payload", "statement type",
"predicate type", "subject", "root digest", "serialization", "resource", "model",
"extra file", "missing file", "digest mismatch".
"""

import base64
import hashlib
import json
import os
import stat

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
# model-signing leaves these out by default, at the model's root only (not in subfolders).
GIT_PATHS = (".git", ".gitattributes", ".github", ".gitignore")

_CURVES = {
    "P-256": ec.SECP256R1, "P-384": ec.SECP384R1, "P-521": ec.SECP521R1,
    "secp256r1": ec.SECP256R1, "secp384r1": ec.SECP384R1, "secp521r1": ec.SECP521R1,
}
_HASH_FOR_CURVE = {"secp256r1": hashes.SHA256, "secp384r1": hashes.SHA384,
                   "secp521r1": hashes.SHA512}
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------
# keys

def generate_key(path_private, path_public, curve="P-256"):
    """Writes a new key pair: private as unencrypted PKCS#8 PEM, public as SPKI PEM.
    Returns (private_pem, public_pem) as bytes."""
    key = ec.generate_private_key(_CURVES[curve]())
    private_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    with open(path_private, "wb") as f:
        f.write(private_pem)
    with open(path_public, "wb") as f:
        f.write(public_pem)
    return private_pem, public_pem


def _pem_bytes(pem_or_path):
    """Accepts PEM text (bytes or str) or a path to a PEM file."""
    if isinstance(pem_or_path, (bytes, bytearray)):
        return bytes(pem_or_path)
    if isinstance(pem_or_path, str) and pem_or_path.lstrip().startswith("-----BEGIN"):
        return pem_or_path.encode("ascii")
    with open(pem_or_path, "rb") as f:
        return f.read()


def _load_private(pem_or_path):
    key = serialization.load_pem_private_key(_pem_bytes(pem_or_path), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name not in _HASH_FOR_CURVE:
        raise ValueError("only P-256, P-384 and P-521 keys are supported")
    return key


def _load_public(pem_or_path):
    key = serialization.load_pem_public_key(_pem_bytes(pem_or_path))
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name not in _HASH_FOR_CURVE:
        raise ValueError("only P-256, P-384 and P-521 keys are supported")
    return key


def public_pem_of(private_pem):
    """The SPKI PEM (bytes) of a private key given as PEM or path."""
    return _load_private(private_pem).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_hint(public_key):
    """Hex SHA-256 of the key's SPKI PEM as re-encoded by OpenSSL ("-----BEGIN PUBLIC KEY-----\\n",
    base64 lines of 64, "-----END PUBLIC KEY-----\\n"). Accepts a PEM, a path, or a key object;
    the PEM's own bytes are not hashed as they are: the key is re-encoded first."""
    if not isinstance(public_key, ec.EllipticCurvePublicKey):
        public_key = _load_public(public_key)
    pem = public_key.public_bytes(serialization.Encoding.PEM,
                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(pem).hexdigest()


# ---------------------------------------------------------------------------------------
# hashing the model

def pae(payload, payload_type=PAYLOAD_TYPE):
    """DSSE v1 pre-authentication encoding:
    b"DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in decimal bytes."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def path_sort_key(relpath):
    """model-signing sorts resources as POSIX paths: component by component, each compared
    by code point (== UTF-8 byte order). So "a/b" < "a-b" < "a.b", unlike a plain string sort."""
    return tuple(relpath.split("/"))


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def _normalize_ignores(ignore):
    out = set()
    for p in ignore:
        p = str(p).replace(os.sep, "/")
        parts = [c for c in p.split("/") if c not in ("", ".")]
        if parts:
            out.add("/".join(parts))
    return out


def _ignored(relpath, ignores):
    """True when relpath is one of the ignored paths or lies under one (by whole components)."""
    for ig in ignores:
        if relpath == ig or relpath.startswith(ig + "/"):
            return True
    return False


def file_digests(folder, ignore=GIT_PATHS + ("model.sig",), *, allow_symlinks=False):
    """{relative POSIX path: sha256 hex} of every regular file under `folder`, as the "files"
    method computes it. `ignore` holds paths relative to the folder; a directory ignores all
    below it. Ignored paths are skipped before anything else is looked at. A symbolic link
    raises ValueError unless allow_symlinks (then a link to a file is hashed by its target's
    content under the link's name, and a link to a directory is skipped, not followed), and
    so does anything that is neither a file nor a directory. Empty directories contribute
    nothing. If `folder` is a single file, the result is {".": digest}."""
    folder = os.fspath(folder)
    if os.path.isfile(folder) and not os.path.islink(folder):
        return {".": _sha256_file(folder)}
    ignores = _normalize_ignores(ignore)
    out = {}

    def walk(abs_dir, rel_dir):
        with os.scandir(abs_dir) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            rel = e.name if not rel_dir else rel_dir + "/" + e.name
            if _ignored(rel, ignores):
                continue
            if e.is_symlink():
                if not allow_symlinks:
                    raise ValueError(f"{rel}: is a symbolic link")
                if os.path.isfile(e.path):
                    out[rel] = _sha256_file(e.path)
                elif not os.path.isdir(e.path):
                    raise ValueError(f"{rel}: broken symbolic link")
                continue
            mode = e.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                walk(e.path, rel)
            elif stat.S_ISREG(mode):
                out[rel] = _sha256_file(e.path)
            else:
                raise ValueError(f"{rel}: neither a file nor a directory")

    walk(folder, "")
    return out


def root_digest(resources):
    """sha256 hex over the raw digests of `resources` (list of {"digest": hex}) in list order."""
    h = hashlib.sha256()
    for r in resources:
        h.update(bytes.fromhex(r["digest"]))
    return h.hexdigest()


def model_name_of(folder):
    """The subject name: the folder's last path component (resolved if it is '.' or '..')."""
    folder = os.fspath(folder).rstrip("/") or "/"
    name = os.path.basename(folder)
    if name in ("", ".", ".."):
        name = os.path.basename(os.path.realpath(folder))
    return name


# ---------------------------------------------------------------------------------------
# statement and bundle

def build_statement(model_name, digests, *, ignore_paths=None, allow_symlinks=False):
    """The in-toto statement for {relpath: hex} digests, resources sorted as model-signing does.
    `ignore_paths` (relative POSIX strings) is recorded when non-empty, sorted here (model-signing
    writes them in a set's arbitrary order)."""
    resources = [{"algorithm": "sha256", "digest": digests[name], "name": name}
                 for name in sorted(digests, key=path_sort_key)]
    ser = {"method": "files", "hash_type": "sha256", "allow_symlinks": bool(allow_symlinks)}
    if ignore_paths:
        ser["ignore_paths"] = sorted(set(ignore_paths))
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": model_name, "digest": {"sha256": root_digest(resources)}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {"serialization": ser, "resources": resources},
    }


def statement_bytes(statement):
    """The payload bytes as model-signing lays them out: indent 2, ": " and ",", ASCII only,
    no trailing newline. Only the signature depends on these exact bytes."""
    return json.dumps(statement, indent=2, ensure_ascii=True).encode("utf-8")


def _b64(data):
    return base64.b64encode(data).decode("ascii")


def make_bundle(payload, private_pem, *, payload_type=PAYLOAD_TYPE):
    """A signed bundle dict over raw `payload` bytes (already-serialized statement)."""
    key = _load_private(private_pem)
    h = _HASH_FOR_CURVE[key.curve.name]()
    sig = key.sign(pae(payload, PAYLOAD_TYPE), ec.ECDSA(h))  # DER (SEQUENCE of r, s)
    return {
        "mediaType": MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": key_hint(key.public_key())},
                                 "tlogEntries": []},
        "dsseEnvelope": {"payload": _b64(payload), "payloadType": payload_type,
                         "signatures": [{"sig": _b64(sig), "keyid": ""}]},
    }


def resign(bundle, private_pem, statement):
    """A copy of `bundle` whose payload is `statement` (dict, or raw bytes), validly signed with
    private_pem: for bundles whose content is wrong but whose signature is good."""
    payload = statement if isinstance(statement, (bytes, bytearray)) else statement_bytes(statement)
    new = make_bundle(bytes(payload), private_pem,
                      payload_type=bundle.get("dsseEnvelope", {}).get("payloadType", PAYLOAD_TYPE))
    out = json.loads(json.dumps(bundle))
    out["dsseEnvelope"] = new["dsseEnvelope"]
    return out


def bundle_json(bundle):
    """Compact JSON, keys in insertion order, as model-signing writes it (no trailing newline)."""
    return json.dumps(bundle, separators=(",", ":"))


def load_bundle(path):
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def write_bundle(bundle, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(bundle_json(bundle))


def statement_of(bundle):
    """The decoded statement (dict) of a bundle; does not check the signature."""
    return json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))


def _rel_inside(folder, path):
    """`path` relative to `folder` as POSIX text if it lies inside it, else None. A relative
    `path` is taken as relative to the folder (the signature path is made absolute first)."""
    folder_abs = os.path.realpath(folder)
    p = os.fspath(path)
    p_abs = os.path.realpath(p if os.path.isabs(p) else os.path.join(folder_abs, p))
    rel = os.path.relpath(p_abs, folder_abs)
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
        return None
    return rel.replace(os.sep, "/")


def sign_folder(folder, private_pem, signature_path, *, ignore_paths=None, ignore_git_paths=True,
                allow_symlinks=False, model_name=None):
    """Signs `folder` like `model_signing sign key --private-key K --signature S FOLDER`, writes
    the bundle to signature_path and returns it. ignore_paths: extra paths, relative to the
    folder or absolute. The git paths and the signature file (when inside the folder) are left
    out and recorded in ignore_paths, as model-signing does."""
    recorded = set(GIT_PATHS) if ignore_git_paths else set()
    for p in list(ignore_paths or ()) + [os.path.abspath(signature_path)]:
        rel = _rel_inside(folder, p)
        if rel is not None:
            recorded.add(rel)
    digests = file_digests(folder, recorded, allow_symlinks=allow_symlinks)
    if os.path.isfile(folder):  # a one-file model: model-signing still records the git paths
        recorded = set(GIT_PATHS) if ignore_git_paths else set()
    statement = build_statement(model_name or model_name_of(folder), digests,
                                ignore_paths=recorded, allow_symlinks=allow_symlinks)
    bundle = make_bundle(statement_bytes(statement), private_pem)
    write_bundle(bundle, signature_path)
    return bundle


# ---------------------------------------------------------------------------------------
# verification

def verify_folder(folder, signature_path, public_pem, *, ignore_paths=None, ignore_git_paths=True,
                  allow_symlinks=False):
    """Checks `folder` against the bundle at signature_path with the public key (PEM or path).
    Returns a list of problems, empty when verified. What is ignored while re-hashing: the git
    paths (unless ignore_git_paths is false), the signature file if inside the folder, the
    extra ignore_paths, and the ignore_paths recorded in the signed predicate."""
    problems = []
    try:
        with open(signature_path, "rb") as f:
            bundle = json.loads(f.read())
    except (OSError, ValueError) as e:
        return [f"bundle: cannot read: {e}"]
    if not isinstance(bundle, dict):
        return ["bundle: not a JSON object"]

    if bundle.get("mediaType") != MEDIA_TYPE:
        problems.append(f"media type: {bundle.get('mediaType')!r}, expected {MEDIA_TYPE!r}")

    key = _load_public(public_pem)
    vm = bundle.get("verificationMaterial")
    pk = vm.get("publicKey") if isinstance(vm, dict) else None
    if not isinstance(pk, dict):
        problems.append("bundle: no verificationMaterial.publicKey")
    else:
        hint = pk.get("hint")
        # older model-signing (1.0.x) wrote rawBytes/keyDetails and no hint: accepted
        if hint and hint != key_hint(key):
            problems.append("hint: bundle names another public key")

    env = bundle.get("dsseEnvelope")
    if not isinstance(env, dict):
        return problems + ["bundle: no dsseEnvelope"]
    try:
        payload = base64.b64decode(env["payload"], validate=True)
    except (KeyError, TypeError, ValueError):
        return problems + ["bundle: payload missing or not base64"]
    sigs = env.get("signatures")
    if not isinstance(sigs, list) or not sigs or not isinstance(sigs[0], dict):
        problems.append("signature: none in envelope")
    else:
        try:
            sig = base64.b64decode(sigs[0]["sig"], validate=True)
            key.verify(sig, pae(payload, PAYLOAD_TYPE),
                       ec.ECDSA(_HASH_FOR_CURVE[key.curve.name]()))
        except (KeyError, TypeError, ValueError, InvalidSignature):
            problems.append("signature: does not verify with this public key")
    if env.get("payloadType") != PAYLOAD_TYPE:
        problems.append(f"payload type: {env.get('payloadType')!r}, expected {PAYLOAD_TYPE!r}")

    try:
        st = json.loads(payload)
    except ValueError:
        return problems + ["payload: not JSON"]
    if not isinstance(st, dict):
        return problems + ["payload: not a JSON object"]
    if st.get("_type") != STATEMENT_TYPE:
        problems.append(f"statement type: {st.get('_type')!r}")
    if st.get("predicateType") != PREDICATE_TYPE:
        problems.append(f"predicate type: {st.get('predicateType')!r}")
    subj = st.get("subject")
    want_root = None
    if not isinstance(subj, list) or len(subj) != 1 or not isinstance(subj[0], dict):
        problems.append("subject: expected exactly one")
    else:
        want_root = (subj[0].get("digest") or {}).get("sha256")
        if not isinstance(want_root, str):
            problems.append("subject: no sha256 digest")

    pred = st.get("predicate")
    if not isinstance(pred, dict):
        return problems + ["payload: no predicate"]
    ser = pred.get("serialization")
    res = pred.get("resources")
    if not isinstance(ser, dict) or ser.get("method") != "files" or ser.get("hash_type") != "sha256":
        problems.append(f"serialization: unsupported {ser!r}")
        ser = ser if isinstance(ser, dict) else {}
    if not isinstance(res, list):
        return problems + ["resource: predicate has no resources list"]

    signed = {}
    try:
        got_root = root_digest(res)
    except (KeyError, TypeError, ValueError):
        return problems + ["resource: malformed entry"]
    if want_root is not None and got_root != want_root:
        problems.append(f"root digest: subject says {want_root}, resources hash to {got_root}")
    for r in res:
        if not isinstance(r, dict) or r.get("algorithm") != "sha256" \
                or not isinstance(r.get("name"), str):
            problems.append(f"resource: malformed {r!r}")
            continue
        if r["name"] in signed:
            problems.append(f"resource: {r['name']} listed twice")
        signed[r["name"]] = r["digest"].lower()

    ignores = set(GIT_PATHS) if ignore_git_paths else set()
    for p in list(ignore_paths or ()) + [os.path.abspath(signature_path)]:
        rel = _rel_inside(folder, p)
        if rel is not None:
            ignores.add(rel)
    for p in ser.get("ignore_paths") or ():
        if isinstance(p, str) and not os.path.isabs(p):
            rel = _rel_inside(folder, p)
            if rel is not None:
                ignores.add(rel)
    try:
        actual = file_digests(folder, ignores, allow_symlinks=allow_symlinks)
    except (OSError, ValueError) as e:
        return problems + [f"model: {e}"]

    for name in sorted(set(actual) - set(signed), key=path_sort_key):
        problems.append(f"extra file: {name}")
    for name in sorted(set(signed) - set(actual), key=path_sort_key):
        problems.append(f"missing file: {name}")
    for name in sorted(set(signed) & set(actual), key=path_sort_key):
        if signed[name] != actual[name]:
            problems.append(f"digest mismatch: {name}")
    return problems
