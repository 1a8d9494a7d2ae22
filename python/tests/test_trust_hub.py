"""tlio hash and verify of a URL against what the server publishes, nginx as a Hub: its
X-Linked-Etag (direct, through a redirect to a CDN, through hf://) or a strong ETag of 64 hex
digits, and the Hugging Face cache's blob name."""
import json
import os

import pytest

import tlio
from http_servers import nginx
from trust_helpers import EXAMPLE, MIXED, run, sha
from trust_helpers import weights  # noqa: F401 (a pytest fixture)


# ---------------------------------------------------------------------------------------
# a Hub's X-Linked-Etag

@pytest.fixture(scope="module")
def hub(tmp_path_factory, weights):
    """nginx as the Hub: /org/repo/resolve/main/{model,changed}.safetensors answered with an
    X-Linked-Etag (right / wrong, as if the file changed on the server after it was published),
    /r/{good,bad}.safetensors the same as a 302 to /cdn/ carrying the header, /plain/ without,
    /etag/{good,bad,weak}.safetensors with an ETag of 64 hex digits (right, wrong, weak)."""
    root = tmp_path_factory.mktemp("hub")
    resolve = root / "org" / "repo" / "resolve" / "main"
    resolve.mkdir(parents=True)
    for d in ("cdn", "plain", "etag"):
        (root / d).mkdir()
    data = weights.read_bytes()
    for path in (resolve / "model.safetensors", resolve / "changed.safetensors", root / "cdn" / "good.safetensors",
                 root / "cdn" / "bad.safetensors", root / "plain" / "model.safetensors",
                 root / "etag" / "good.safetensors", root / "etag" / "bad.safetensors", root / "etag" / "weak.safetensors"):
        path.write_bytes(data)
    good, wrong = sha(data), sha(EXAMPLE)
    extra = f"""
    location = /org/repo/resolve/main/model.safetensors {{ add_header X-Linked-Etag '"{good}"' always; }}
    location = /org/repo/resolve/main/changed.safetensors {{ add_header X-Linked-Etag '"{wrong}"' always; }}
    location = /r/good.safetensors {{ add_header X-Linked-Etag '"{good}"' always; return 302 /cdn/good.safetensors; }}
    location = /r/bad.safetensors {{ add_header X-Linked-Etag '"{wrong}"' always; return 302 /cdn/bad.safetensors; }}
    location = /etag/good.safetensors {{ etag off; add_header ETag '"{good}"' always; }}
    location = /etag/bad.safetensors {{ etag off; add_header ETag '"{wrong}"' always; }}
    location = /etag/weak.safetensors {{ etag off; add_header ETag 'W/"{wrong}"' always; }}
"""
    home = tmp_path_factory.mktemp("hf-home")
    with nginx(root, extra=extra) as server:
        server.good, server.wrong, server.size = good, wrong, len(data)
        server.env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(home)}
        for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HF_TOKEN_PATH"):
            server.env.pop(name, None)
        yield server


def hub_urls(hub, good):
    name = "model" if good else "changed"
    cdn = "good" if good else "bad"
    return [f"{hub.url}/org/repo/resolve/main/{name}.safetensors", f"{hub.url}/r/{cdn}.safetensors",
            f"hf://org/repo/{name}.safetensors"]


@pytest.fixture
def hub_env(hub, monkeypatch):
    """The hub, with this process's environment pointing hf:// at it (for Python's calls)."""
    for name in ("HF_ENDPOINT", "HF_HOME"):
        monkeypatch.setenv(name, hub.env[name])
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HF_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    return hub


def test_hash_and_verify_a_url_check_its_x_linked_etag(hub_env):
    """Directly, through the Hub's redirect to its CDN, and through hf://."""
    hub = hub_env
    for url in hub_urls(hub, good=True):
        out = run("hash", url, env=hub.env)
        assert out.returncode == 0, (url, out.stderr)
        assert out.stdout == f"{hub.good}  {url}\n"
        doc = json.loads(run("hash", "--json", url, env=hub.env).stdout)
        assert doc["ok"] is True and doc["files"][0]["checked_against"] == "X-Linked-Etag", url
        assert doc["files"][0]["sha256"] == hub.good and doc["files"][0]["size"] == hub.size
        out = run("verify", url, env=hub.env)
        assert out.returncode == 0, (url, out.stderr)
        assert out.stdout.endswith(f": OK (sha256 {hub.good}, matches its X-Linked-Etag)\n"), out.stdout
        res = json.loads(run("verify", "--json", url, env=hub.env).stdout)["results"][0]
        assert res["ok"] is True and res["kind"] == "file"
        assert res["checked_against"] == "X-Linked-Etag" and res["sha256"] == hub.good
        assert run("verify", url, "--sha256", hub.good.upper(), env=hub.env).returncode == 0
        out = run("verify", url, "--sha256", hub.wrong, env=hub.env)
        assert out.returncode == 1 and f"not the expected {hub.wrong}" in out.stderr
        assert tlio.hash_file(url) == hub.good
        assert tlio.load_file(url, sha256=hub.good)["i"].tolist() == list(range(100))
    assert any(line.startswith("302 ") for line in hub.log.read_text().splitlines())  # the redirect was taken
    # A strong ETag of 64 hex digits is taken as the SHA-256 too; a weak one is not.
    etag = f"{hub.url}/etag/good.safetensors"
    doc = json.loads(run("hash", "--json", etag, env=hub.env).stdout)
    assert doc["ok"] is True and doc["files"][0]["checked_against"] == "ETag"
    assert run("verify", etag, env=hub.env).stdout.endswith(f": OK (sha256 {hub.good}, matches its ETag)\n")
    out = run("hash", f"{hub.url}/etag/bad.safetensors", env=hub.env)
    assert out.returncode == 1 and f"but ETag says {hub.wrong}" in out.stderr
    doc = json.loads(run("hash", "--json", f"{hub.url}/etag/weak.safetensors", env=hub.env).stdout)
    assert doc["ok"] is True and doc["files"][0]["checked_against"] is None
    # A server that publishes nothing: hashed, checked against nothing.
    plain = f"{hub.url}/plain/model.safetensors"
    doc = json.loads(run("hash", "--json", plain, env=hub.env).stdout)
    assert doc["files"][0]["sha256"] == hub.good and doc["files"][0]["checked_against"] is None
    out = run("verify", plain, env=hub.env)
    assert out.returncode == 0 and out.stdout.endswith(f": OK (sha256 {hub.good})\n")


def test_a_wrong_x_linked_etag_fails_hash_and_verify_naming_both_digests(hub_env):
    hub = hub_env
    for url in hub_urls(hub, good=False):
        for cmd in ("hash", "verify"):
            out = run(cmd, url, env=hub.env)
            assert out.returncode == 1, (cmd, url, out.stdout)
            assert "OK" not in out.stdout and hub.good not in out.stdout
            assert f"its bytes have SHA-256 {hub.good}, but X-Linked-Etag says {hub.wrong}" in out.stderr, out.stderr
        doc = json.loads(run("hash", "--json", url, env=hub.env).stdout)
        assert doc["ok"] is False and doc["files"][0]["sha256"] is None
        assert hub.wrong in doc["files"][0]["error"]["message"]
        # the expected digest given matches the bytes, but the server's does not: still refused
        assert run("verify", url, "--sha256", hub.good, env=hub.env).returncode == 1
        with pytest.raises(tlio.VerificationError) as e:
            tlio.hash_file(url)
        assert hub.good in str(e.value) and hub.wrong in str(e.value) and "X-Linked-Etag" in str(e.value)


def test_a_cached_hub_file_is_checked_against_its_blob_name(tmp_path, monkeypatch):
    """The Hugging Face cache names an LFS blob by its SHA-256: a blob whose bytes changed is
    caught without asking the Hub."""
    home = tmp_path / "home"
    repo = home / "hub" / "models--org--cached"
    commit = "c" * 40
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    good_blob = repo / "blobs" / sha(EXAMPLE)
    good_blob.write_bytes(EXAMPLE.read_bytes())
    bad_blob = repo / "blobs" / sha(MIXED)
    bad_blob.write_bytes(EXAMPLE.read_bytes())  # named after another file's digest
    (repo / "snapshots" / commit / "good.safetensors").symlink_to(good_blob)
    (repo / "snapshots" / commit / "bad.safetensors").symlink_to(bad_blob)
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    doc = json.loads(run("hash", "--json", "hf://org/cached/good.safetensors", env=env).stdout)
    assert doc["ok"] is True and doc["files"][0]["sha256"] == sha(EXAMPLE)
    assert doc["files"][0]["checked_against"] == "the Hugging Face cache's blob name"
    out = run("hash", "hf://org/cached/bad.safetensors", env=env)
    assert out.returncode == 1 and sha(MIXED) in out.stderr and sha(EXAMPLE) in out.stderr
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(tlio.VerificationError):
        tlio.hash_file("hf://org/cached/bad.safetensors")
