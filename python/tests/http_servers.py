"""Servers for the remote-file tests, on 127.0.0.1 only: Debian's nginx with a generated
config, and a small server of faults (ignores Range, changes the file, cuts a connection,
answers 500 or 429 first, redirects to another port, stalls)."""
import contextlib
import http.server
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@contextlib.contextmanager
def nginx(root, tls=False, extra=""):
    """nginx serving `root` at the yielded base URL; the access log path is `.log` of the
    yielded object (one line per request: status, bytes sent, range). With tls, https with a
    self-signed certificate for 127.0.0.1, whose path is `.cert`. `extra`: configuration text
    put inside the server block (locations adding headers, redirects)."""
    prefix = pathlib.Path(tempfile.mkdtemp(prefix="tlio-nginx-"))
    port = free_port()
    (prefix / "logs").mkdir()
    (prefix / "tmp").mkdir()
    listen = f"127.0.0.1:{port}"
    if tls:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(prefix / "key.pem"), "-out", str(prefix / "cert.pem")],
                       check=True, capture_output=True)
        listen += f" ssl; ssl_certificate {prefix}/cert.pem; ssl_certificate_key {prefix}/key.pem"
    conf = prefix / "nginx.conf"
    # As root, nginx's workers would switch to nobody, who cannot read pytest's private folders.
    user = "user root;" if os.geteuid() == 0 else ""
    conf.write_text(f"""
{user}
worker_processes 1;
error_log {prefix}/logs/error.log;
pid {prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  log_format ranges '$status $body_bytes_sent "$http_range" "$http_authorization"';
  access_log {prefix}/logs/access.log ranges;
  client_body_temp_path {prefix}/tmp; proxy_temp_path {prefix}/tmp; fastcgi_temp_path {prefix}/tmp;
  uwsgi_temp_path {prefix}/tmp; scgi_temp_path {prefix}/tmp;
  server {{
    listen {listen};
    root {root};
{extra}
  }}
}}
""")
    proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "logs/error.log"),
                             "-g", "daemon off;"])
    try:
        wait_for(port)
        server = type("Nginx", (), {})()
        server.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        server.log = prefix / "logs" / "access.log"
        server.cert = prefix / "cert.pem"
        yield server
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(prefix, ignore_errors=True)


class FaultHandler(http.server.BaseHTTPRequestHandler):
    """GET /<fault>/<name>: serves files[name] with the fault; every request is recorded."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        fault, _, name = self.path.strip("/").partition("/")
        srv.requests.append((self.path, self.headers.get("Range"), self.headers.get("Authorization"),
                             self.headers.get("If-Range")))
        count = srv.counts[self.path] = srv.counts.get(self.path, 0) + 1
        data = srv.files.get(name)
        if fault == "redirect":  # to the other server (another port: another origin)
            self.send_response(302)
            self.send_header("Location", f"{srv.redirect_to}/plain/{name}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if fault in ("fail-once", "busy-once") and count == 1:
            self.send_response(500 if fault == "fail-once" else 429)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        etag = f'"v{len(data)}-{hash(data) & 0xffff}"'
        if fault == "changes" and count > 1:  # another version from the second request on
            data = srv.files[name + ".v2"]
            etag = '"v2"'
        start, end = 0, len(data) - 1
        ranged = self.headers.get("Range") and fault != "ignore-range"
        if ranged and self.headers.get("If-Range") not in (None, etag):
            ranged = False  # If-Range of another version: the whole (new) file
        if ranged:
            spec = self.headers["Range"].split("=", 1)[1]
            first, _, last = spec.partition("-")
            start, end = int(first), min(int(last), len(data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:end + 1]
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        if fault == "gzip":
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        if fault == "cut-once" and count == 1:  # half the body, then the connection drops
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "stall":
            time.sleep(srv.stall_seconds)
        self.wfile.write(body)


@contextlib.contextmanager
def fault_server(files, redirect_to=None, stall_seconds=5):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FaultHandler)
    srv.daemon_threads = True
    srv.files, srv.requests, srv.counts = files, [], {}
    srv.redirect_to, srv.stall_seconds = redirect_to, stall_seconds
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
