"""`memviz open --no-browser` from the wheel: a local server on 127.0.0.1 with the viewer built
into the binary and the named files; urllib fetches the page, the viewer's files and the
snapshot, and every other path gets 404. Ctrl-C (SIGINT) stops it."""

import re
import signal
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    """(status, headers, body) of a GET; HTTP errors are answers too."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class Server:
    def __init__(self, memviz_exe, *args):
        self.p = subprocess.Popen([memviz_exe, "open", "--no-browser", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self.p.stdout.readline().strip()
        self.line = self.p.stdout.readline().strip()

    def stop(self) -> int:
        """Ctrl-C: SIGINT, as a terminal sends it; returns the exit status."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            return self.p.wait(timeout=20)
        finally:
            if self.p.poll() is None:
                self.p.kill()


@pytest.mark.parametrize("fixed_port", [False, True])
def test_open_serves_the_viewer_and_the_files_only(memviz_exe, fixtures, fixed_port):
    files = [fixtures / "multidevice.pickle", fixtures / "oomdevice.pickle"]
    port = free_port() if fixed_port else 0
    s = Server(memviz_exe, *map(str, files), "--port", str(port))
    try:
        assert s.url.startswith("http://127.0.0.1:"), (s.url, s.p.stderr.read() if s.p.poll() is not None else "")
        u = urllib.parse.urlsplit(s.url)
        if fixed_port:
            assert u.port == port
        assert u.port and f"port {u.port}" in s.line, s.line
        base = f"http://127.0.0.1:{u.port}"
        # The page, with each file named in ?url=.
        urls = urllib.parse.parse_qs(u.query)["url"]
        assert urls == [f"files/{i}/{f.name}" for i, f in enumerate(files)]
        status, headers, body = get(s.url)
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        page = body.decode()
        assert "<canvas" in page and "memviz" in page
        # Every file the page names (scripts, styles, the wasm) is served.
        named = set(re.findall(r'(?:src|href)="([^"#?:]+)"', page))
        named |= {w for w in re.findall(r'"([^"]+\.wasm)"', page)}
        assert any(n.endswith(".js") for n in named) and any(n.endswith(".wasm") for n in named), named
        for n in sorted(named):
            st, h, b = get(f"{base}/{n.lstrip('./')}")
            assert st == 200, (n, st)
            if n.endswith(".wasm"):
                assert h["Content-Type"] == "application/wasm" and b[:4] == b"\0asm", n
        # The files, byte for byte.
        for i, f in enumerate(files):
            st, h, b = get(f"{base}/{urls[i]}")
            assert st == 200 and b == f.read_bytes(), urls[i]
        # Nothing else: other paths, other files, traversal in every spelling.
        for other in ["/nope", "/files/2/x.pickle", f"/files/0/{files[1].name}", "/files/0/",
                      "/../Cargo.toml", "/%2e%2e/Cargo.toml", "/js/..%2f..%2fCargo.toml",
                      "//etc/passwd", f"/files/0/..%2f{files[0].name}", "/Cargo.toml"]:
            st, _, _ = get(base + other)
            assert st == 404, (other, st)
    finally:
        status = s.stop()
    assert status == -signal.SIGINT, status


def test_open_names_a_missing_file(memviz_exe, tmp_path):
    p = subprocess.run([memviz_exe, "open", "--no-browser", str(tmp_path / "missing.pickle")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "missing.pickle" in p.stderr, p.stderr
