"""The page `tlio report` writes, as a person sees it: rendered by headless Chromium (Debian's
`chromium`, installed by scripts/install-deps.sh) with every host but loopback unresolvable and a
recording proxy on 127.0.0.1 as its only way out. The test checks that the page asked for nothing
but itself, logged no error, holds one histogram per tensor, sorts its table when a heading is
clicked, and that the screenshot has drawn pixels where the charts and histograms are."""
import html
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading

import numpy as np
import pytest

import tlio

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 1800, 2400

# Runs in a copy of the page before the page's own script: records errors, then (after load)
# where the drawings are, how many histograms there are, and the table's first row after one and
# two clicks on the "max|x|/std" heading, into a <pre> at the end of the body.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', (e) => window.__errors.push(String(e.message)));
const __consoleError = console.error;
console.error = (...a) => { window.__errors.push(a.join(' ')); __consoleError(...a); };
window.addEventListener('load', () => {
  const rect = (e) => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
  const out = {errors: window.__errors,
               charts: Array.from(document.querySelectorAll('svg.chart'), rect),
               histograms: Array.from(document.querySelectorAll('svg.hist'), (e) => [e.dataset.name, ...rect(e)]),
               rows: document.querySelectorAll('#tensor-table tbody tr').length,
               resources: performance.getEntriesByType('resource').map((e) => e.name)};
  const th = Array.from(document.querySelectorAll('#tensor-table th')).find((h) => h.textContent === 'max|x|/std');
  const first = () => document.querySelector('#tensor-table tbody tr').cells[0].textContent;
  th.click(); out.ascending = first(); out.order = th.dataset.order;
  th.click(); out.descending = first();
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.append(pre);
});
</script>"""


class Recorder(http.server.BaseHTTPRequestHandler):
    """Serves the two pages of the folder it is given; every request is recorded (a proxy's too:
    an absolute URL, or CONNECT for https)."""
    requests = []
    folder = None

    def do_GET(self):  # noqa: N802 - http.server's name
        Recorder.requests.append(("GET", self.path, self.headers.get("Referer")))
        name = self.path.rsplit("/", 1)[-1]
        if name in ("page.html", "probe.html"):
            body = (Recorder.folder / name).read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def do_CONNECT(self):  # noqa: N802
        Recorder.requests.append(("CONNECT", self.path, self.headers.get("Referer")))
        self.send_error(405)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not CHROMIUM:
        pytest.fail("chromium is not installed: run `bash scripts/install-deps.sh`")
    d = tmp_path_factory.mktemp("page")
    rng = np.random.default_rng(3)
    tensors = {f"model.layers.{i}.{kind}.weight": (rng.standard_normal((32, 64)) * (1 + i)).astype(np.float32)
               for i in range(4) for kind in ("self_attn.q_proj", "mlp.down_proj")}
    tensors["model.layers.2.mlp.down_proj.weight"][0, 0] = 90.0
    tensors["model.embed_tokens.weight"] = rng.standard_normal((100, 64)).astype(np.float32)
    tensors["model.norm.weight"] = np.ones(64, np.float32)
    tlio.save_file(tensors, d / "src.safetensors")
    q = subprocess.run([CLI, "quantize", d / "src.safetensors", d / "nf4.safetensors", "--scheme", "nf4"],
                       capture_output=True, text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    figures = tlio.report(d / "nf4.safetensors", d / "src.safetensors", html=d / "page.html")
    page = (d / "page.html").read_text()
    (d / "probe.html").write_text(page.replace("<head>", "<head>" + PROBE, 1))
    Recorder.folder, Recorder.requests = d, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield d, figures, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def chromium(folder, url, *args):
    profile = folder / f"profile-{len(list(folder.glob('profile-*')))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
           "--disable-extensions", "--disable-client-side-phishing-detection", "--disable-domain-reliability",
           "--no-pings", "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,Translate,MediaRouter",
           "--hide-scrollbars", "--force-device-scale-factor=1",
           f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
           f"--proxy-server={url}", "--proxy-bypass-list=<-loopback>",
           "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def page_requests():
    """What reached the recorder from the page: requests for loopback, and any request whose
    Referer is one of the pages (a resource the page asks for from anywhere). The browser's own
    background requests (clock, updates, accounts: to Google's hosts, with no referrer) are not
    the page's."""
    return [path for _, path, referer in Recorder.requests
            if path.startswith("http://127.0.0.1:") or (referer and "127.0.0.1" in referer)]


def test_the_page_draws_sorts_and_asks_for_nothing(served):
    folder, figures, url = served
    Recorder.requests.clear()
    r = chromium(folder, url, "--dump-dom", f"{url}/probe.html")
    assert r.returncode == 0, r.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    assert found, r.stdout[-2000:]
    probe = json.loads(html.unescape(found.group(1)))
    assert probe["errors"] == []
    assert page_requests() == [f"{url}/probe.html"], Recorder.requests
    assert probe["resources"] == []

    names = [t["name"] for t in figures["tensors"]]
    assert probe["rows"] == len(names)
    assert sorted(h[0] for h in probe["histograms"]) == sorted(names)  # one histogram per tensor
    assert len(probe["charts"]) == 2  # outliers, and errors against the source
    ratio = {t["name"]: t["max_over_std"] for t in figures["tensors"] if t["max_over_std"] is not None}
    assert probe["order"] == "asc"
    assert probe["ascending"] == min(ratio, key=ratio.get)
    assert probe["descending"] == "model.layers.2.mlp.down_proj.weight" == max(ratio, key=ratio.get)

    Recorder.requests.clear()
    shot = folder / "page.png"
    r = chromium(folder, url, f"--screenshot={shot}", f"{url}/page.html")
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    assert page_requests() == [f"{url}/page.html"], Recorder.requests
    from PIL import Image
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)

    def share(x, y, w, h, test):
        box = pixels[int(y):int(y + h), int(x):int(x + w)]
        return float(test(box).mean()) if box.size else 0.0

    def coloured(box):  # the series' colours; the page's greys and whites are not
        return (box.max(axis=2) - box.min(axis=2)) > 60

    def blue(box):  # histogram bars
        return np.abs(box - np.array([0x1F, 0x77, 0xB4])).max(axis=2) < 40

    def white(box):
        return box.min(axis=2) > 250

    for x, y, w, h in probe["charts"]:
        assert y + h <= HEIGHT, "a chart is below the screenshot"
        assert share(x, y, w, h, coloured) > 0.001, (x, y, w, h)
        assert share(x, y, w, h, white) < 0.5  # the plot area is shaded, not blank
    shown = [h for h in probe["histograms"] if h[2] + h[4] <= HEIGHT and h[1] + h[3] <= WIDTH]
    assert len(shown) >= 3
    histogram = {t["name"]: t["histogram"] for t in figures["tensors"]}
    for name, x, y, w, h in shown:  # bars as tall as their log counts, where the counts are
        counts = np.array(histogram[name], dtype=np.float64)
        heights = np.where(counts > 0, np.maximum(1, 30 * np.log10(1 + counts) / np.log10(1 + counts.max())), 0)
        want = heights.sum() / (32 * len(counts))
        assert 0.6 * want < share(x, y, w, h, blue) < 1.4 * want + 0.01, name
    # Right of the charts (960 px at most) the page is blank: the measure sees blankness.
    x, y, w, h = probe["charts"][0]
    assert share(x + w + 40, y, WIDTH - (x + w + 40), h, white) > 0.99
    assert share(x + w + 40, y, WIDTH - (x + w + 40), h, coloured) == 0
