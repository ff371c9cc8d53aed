"""A real GCS JSON API on 127.0.0.1 for TensorFlow's own GCS client (libcurl, HTTPS only).

`gcp-storage-emulator` serves the API over plain HTTP; a small TLS proxy in front of it answers
curl's `CONNECT www.googleapis.com:443` (and storage.googleapis.com) with a certificate from a
test CA made here by the `openssl` binary. Processes reach it through `env()`:
HTTPS_PROXY, CURL_CA_BUNDLE, GOOGLE_AUTH_TOKEN_FOR_TESTING and NO_GCE_CHECK (TensorFlow reads them
when its GCS filesystem starts, so use them in a fresh process; the batch cache's own small GCS
client, graphfreeze.batch.cache_gcs, reads the same ones).

The proxy also smooths over what the emulator lacks: it de-chunks request bodies (curl sends
`Transfer-Encoding: chunked` *with* a Content-Length), turns an empty media upload (TensorFlow's
"directory" markers; the emulator fails on those) into a multipart one, answers the bucket's
`storageLayout`, and points resumable-upload `Location`s back at https.
"""

from __future__ import annotations

import http.client
import json
import os
import socketserver
import ssl
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler
from pathlib import Path

HOSTS = ("www.googleapis.com", "storage.googleapis.com")
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length", "te",
        "upgrade", "proxy-authorization"}


def make_certs(folder: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key): a throwaway CA and a cert for the GCS host names."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=graphfreeze test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", f"/CN={HOSTS[0]}")
    (folder / "san.ext").write_text("subjectAltName=" + ",".join(f"DNS:{h}" for h in HOSTS) + "\n"
                                    "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


class _Proxy(BaseHTTPRequestHandler):
    """CONNECT, then HTTP/1.1 over TLS on the same socket, each request forwarded upstream."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # or every small write waits for a delayed ACK (~40 ms)
    upstream: tuple[str, int]
    tls: ssl.SSLContext

    def log_message(self, *args) -> None:
        pass

    def do_CONNECT(self) -> None:
        if self.path.split(":")[0] not in HOSTS:
            self.send_error(403)
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.connection = self.tls.wrap_socket(self.connection, server_side=True)
        self.rfile = self.connection.makefile("rb")
        self.wfile = self.connection.makefile("wb", buffering=0)
        self.close_connection = False

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline().strip():  # trailers
                pass
            return body
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        body = self._body()
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        if url.path.endswith("/storageLayout"):
            bucket = url.path.split("/b/")[1].split("/")[0]
            return self._reply(200, {"Content-Type": "application/json"}, json.dumps(
                {"kind": "storage#storageLayout", "bucket": bucket, "location": "US",
                 "locationType": "multi-region", "hierarchicalNamespace": {"enabled": False}}
            ).encode())
        if query.get("uploadType") == ["media"] and not body:
            boundary = "graphfreeze-empty"
            meta = json.dumps({"name": query["name"][0]})
            body = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n{meta}\r\n"
                    f"--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n\r\n"
                    f"--{boundary}--\r\n").encode()
            headers["Content-Type"] = f"multipart/related; boundary={boundary}"
            self.path = self.path.replace("uploadType=media", "uploadType=multipart")
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            conn.request(self.command, self.path, body, {**headers, "Content-Length": str(len(body))})
            res = conn.getresponse()
            data = res.read()
            out = {k: v for k, v in res.getheaders() if k.lower() not in _HOP}
            if "Location" in out:
                out["Location"] = out["Location"].replace("http://", "https://", 1)
            self._reply(res.status, out, data)
        finally:
            conn.close()

    def _reply(self, status: int, headers: dict, data: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class GcsEmulator:
    """`with GcsEmulator(folder) as gcs:` an in-memory GCS API on 127.0.0.1 behind a TLS proxy."""

    def __init__(self, folder: Path):
        import logging

        from gcp_storage_emulator import server as emulator

        logging.getLogger("gcp_storage_emulator").setLevel(logging.CRITICAL)  # a 404 is an answer
        emulator.RequestHandler.disable_nagle_algorithm = True
        self.ca, cert, key = make_certs(folder)
        self._api = emulator.create_server("127.0.0.1", 0, in_memory=True)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        handler = type("Proxy", (_Proxy,), {"tls": tls, "upstream": None})
        self._proxy = _Server(("127.0.0.1", 0), handler)
        self._handler = handler

    def __enter__(self) -> GcsEmulator:
        self._api.start()
        self._handler.upstream = self._api._api._httpd.server_address[:2]
        threading.Thread(target=self._proxy.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._proxy.shutdown()
        self._proxy.server_close()
        self._api.stop()

    def env(self) -> dict[str, str]:
        """os.environ plus what sends TensorFlow's GCS client here."""
        proxy = "http://{}:{}".format(*self._proxy.server_address[:2])
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "all_proxy")}
        return {**env, "HTTPS_PROXY": proxy, "https_proxy": proxy, "CURL_CA_BUNDLE": str(self.ca),
                "GOOGLE_AUTH_TOKEN_FOR_TESTING": "graphfreeze-test", "NO_GCE_CHECK": "true"}

    def _call(self, method: str, path: str, body: bytes | None = None,
              kind: str = "application/json") -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(*self._handler.upstream, timeout=30)
        try:
            conn.request(method, path, body, {"Content-Type": kind} if body else {})
            res = conn.getresponse()
            return res.status, res.read()
        finally:
            conn.close()

    def create_bucket(self, name: str) -> None:
        status, data = self._call("POST", "/storage/v1/b", json.dumps({"name": name}).encode())
        assert status == 200, data

    def put(self, bucket: str, name: str, data: bytes) -> None:
        query = urllib.parse.urlencode({"uploadType": "media", "name": name})
        status, body = self._call("POST", f"/upload/storage/v1/b/{bucket}/o?{query}", data,
                                  "application/octet-stream")
        assert status == 200, body

    def delete(self, bucket: str, name: str) -> None:
        status, body = self._call("DELETE", f"/storage/v1/b/{bucket}/o/"
                                            + urllib.parse.quote(name, safe=""))
        assert status in (200, 204), body

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under prefix, name -> content (straight from the emulator)."""
        query = urllib.parse.urlencode({"prefix": prefix})
        status, data = self._call("GET", f"/storage/v1/b/{bucket}/o?{query}")
        assert status == 200, data
        out = {}
        for item in json.loads(data).get("items", []):
            name = urllib.parse.quote(item["name"], safe="")
            status, out[item["name"]] = self._call("GET", f"/download/storage/v1/b/{bucket}/o/{name}"
                                                          "?alt=media")
            assert status == 200
        return out
