"""Hashes and model signatures: the package's functions over the compiled module's, re-exported
by tlio."""
import os as _os

from . import _tlio
from ._tlio import VerificationError


def _sha256_argument(sha256):
    if not isinstance(sha256, str):
        raise TypeError(f"sha256 must be a str of 64 hex digits, not {type(sha256).__name__}")
    if not sha256:
        raise ValueError("sha256 is empty: give 64 hex digits, or None for no check")
    return sha256


def _paths(value):
    """None, one path (str, bytes or os.PathLike) or an iterable of them, as a list of str
    (TypeError for anything else, from os.fsdecode)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        return [_os.fsdecode(value)]
    return [_os.fsdecode(v) for v in value]


def hash_file(path, *, token=None):
    """The SHA-256 of the file at `path` (a path or URL), as 64 lower-case hex digits, read once
    front to back (a URL hashed as it downloads, nothing stored). When its server publishes a
    SHA-256 (the Hub's X-Linked-Etag), the bytes are checked against it: VerificationError."""
    return _tlio.hash_file(_os.fspath(path), token or "")


def sign(folder, *, key, signature=None, ignore_paths=()):
    """Signs every file of `folder` with the PEM private key file `key` (ECDSA on P-256, P-384
    or P-521) in the OpenSSF model-signing v1.0 format; the signature goes to `signature`
    (default FOLDER/model.sig), written atomically. `ignore_paths`: paths in the folder left
    out (besides the signature and the .git paths). Returns the signature's path."""
    return _tlio.sign_folder(_os.fspath(folder), _os.fspath(key),
                             _os.fspath(signature) if signature is not None else "",
                             _paths(ignore_paths))


def verify(folder, *, key, signature=None, ignore_paths=()):
    """Checks `folder` against its model signature (default FOLDER/model.sig) with the PEM
    public key file `key` (a private key's public half serves too). Returns {"files": files listed, "key_hint": ...} when every file and
    the signature match; raises VerificationError otherwise, whose `problems` lists each
    failure (a file changed, added or missing, the key hint, the signature, the root digest)."""
    result = _tlio.check_signature(_os.fspath(folder), _os.fspath(key),
                                   _os.fspath(signature) if signature is not None else "",
                                   _paths(ignore_paths))
    if result["problems"]:
        error = VerificationError(f"{_os.fspath(folder)}: the signature does not match: "
                                  + "; ".join(result["problems"]))
        error.problems = list(result["problems"])
        raise error
    return {"files": result["files"], "key_hint": result["key_hint"]}
