"""A small client for the GCS JSON API over http.client, for the batch cache on gs://: no
TensorFlow (a cache hit must not import it), no Google client library.

Where: https://storage.googleapis.com, through `HTTPS_PROXY` when set, trusting the CA bundle in
`CURL_CA_BUNDLE`/`REQUESTS_CA_BUNDLE`/`SSL_CERT_FILE` when set (the same environment TensorFlow's
GCS client reads); or `STORAGE_EMULATOR_HOST` (plain http). Credentials, first found:
`CLOUDSDK_AUTH_ACCESS_TOKEN` or `GOOGLE_AUTH_TOKEN_FOR_TESTING` (a token), google-auth's
application default credentials when installed (the `gcs` extra: key files,
workload identity federation), else the GCE/GKE metadata server.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import threading
import time
import urllib.parse

from graphfreeze.errors import OutputError, install_hint

API_HOST = "storage.googleapis.com"
SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
_METADATA = ("metadata.google.internal",
             "/computeMetadata/v1/instance/service-accounts/default/token")


class GcsError(OutputError):
    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


def split(url: str) -> tuple[str, str]:
    """gs://bucket/a/b -> ("bucket", "a/b")."""
    bucket, _, name = url[len("gs://"):].partition("/")
    return bucket, name.strip("/")


class Client:
    """Thread-safe: one kept-alive connection per thread."""

    def __init__(self):
        emulator = os.environ.get("STORAGE_EMULATOR_HOST")
        self._local = threading.local()
        self._token: tuple[str, float] | None = None
        self._lock = threading.Lock()
        if emulator:
            url = urllib.parse.urlsplit(emulator if "://" in emulator else "http://" + emulator)
            self._target, self._https, self._proxy = (url.hostname, url.port or 80), False, None
            self._token = ("emulator", float("inf"))
            return
        self._target, self._https = (API_HOST, 443), True
        proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
        no_proxy = os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or ""
        if proxy and not any(API_HOST.endswith(h.strip().lstrip(".")) for h in no_proxy.split(",")
                             if h.strip()):
            url = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
            self._proxy = (url.hostname, url.port or 80)
        else:
            self._proxy = None
        bundle = next((os.environ[v] for v in ("CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
                                               "SSL_CERT_FILE") if os.environ.get(v)), None)
        self._tls = ssl.create_default_context(cafile=bundle)

    # -- connections and credentials ----------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if not self._https:
                conn = http.client.HTTPConnection(*self._target, timeout=60)
            elif self._proxy:
                conn = http.client.HTTPSConnection(*self._proxy, timeout=60, context=self._tls)
                conn.set_tunnel(*self._target)
            else:
                conn = http.client.HTTPSConnection(*self._target, timeout=60, context=self._tls)
            self._local.conn = conn
        return conn

    def _bearer(self) -> str:
        with self._lock:
            if self._token is None or self._token[1] < time.time() + 60:
                self._token = _fetch_token()
            return self._token[0]

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None, ok=(200,)) -> tuple[int, bytes]:
        """(status, body); a status outside `ok` (404 is for the caller to allow) raises
        GcsError. Connection drops and 429/5xx are retried with backoff."""
        headers = {**(headers or {}), "Authorization": f"Bearer {self._bearer()}"}
        if body is not None:
            headers["Content-Length"] = str(len(body))
        for attempt in range(5):
            conn = self._connection()
            try:
                conn.request(method, path, body, headers)
                res = conn.getresponse()
                data = res.read()
            except (OSError, http.client.HTTPException) as err:
                conn.close()
                self._local.conn = None
                if attempt == 4:
                    raise GcsError(f"cannot reach {self._target[0]} ({err})") from err
                time.sleep(0.05 * 2 ** attempt)
                continue
            if res.status in ok:
                return res.status, data
            if res.status in (429, 500, 502, 503, 504) and attempt < 4:
                time.sleep(0.1 * 2 ** attempt)
                continue
            raise GcsError(_reason(res.status, data), res.status)
        raise AssertionError("unreachable")

    # -- objects ---------------------------------------------------------------------------------
    def read(self, bucket: str, name: str) -> bytes | None:
        """An object's bytes, None when there is none."""
        status, data = self.request("GET", f"/storage/v1/b/{bucket}/o/{_q(name)}?alt=media",
                                    ok=(200, 404))
        return data if status == 200 else None

    def write(self, bucket: str, name: str, data: bytes) -> None:
        """One request: the object appears whole or not at all."""
        query = urllib.parse.urlencode({"uploadType": "media", "name": name})
        self.request("POST", f"/upload/storage/v1/b/{bucket}/o?{query}", data,
                     {"Content-Type": "application/octet-stream"})

    def delete(self, bucket: str, name: str) -> None:
        self.request("DELETE", f"/storage/v1/b/{bucket}/o/{_q(name)}", ok=(200, 204, 404))

    def list(self, bucket: str, prefix: str) -> list[dict]:
        """Every object under `prefix`: dicts with name, size (int), updated (epoch seconds)."""
        items, token = [], None
        while True:
            query = {"prefix": prefix, "fields": "items(name,size,updated),nextPageToken"}
            if token:
                query["pageToken"] = token
            _, data = self.request("GET", f"/storage/v1/b/{bucket}/o?"
                                   + urllib.parse.urlencode(query))
            page = json.loads(data or b"{}")
            for item in page.get("items") or ():
                items.append({"name": item["name"], "size": int(item.get("size") or 0),
                              "updated": _epoch(item.get("updated"))})
            token = page.get("nextPageToken")
            if not token:
                return items


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _epoch(stamp: str | None) -> float:
    from datetime import datetime

    if not stamp:
        return 0.0
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _reason(status: int, data: bytes) -> str:
    try:
        message = json.loads(data)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = data[:200].decode("utf-8", "replace").strip()
    words = {401: "not authorized", 403: "permission denied", 404: "no such bucket"}
    return f"{words.get(status, f'HTTP {status}')}: {message}" if message else \
        words.get(status, f"HTTP {status}")


def _fetch_token() -> tuple[str, float]:
    """(access token, expiry in epoch seconds) from the first source that has one."""
    for var in ("CLOUDSDK_AUTH_ACCESS_TOKEN", "GOOGLE_AUTH_TOKEN_FOR_TESTING"):
        if os.environ.get(var):
            return os.environ[var], time.time() + 3000
    try:
        import google.auth
        import google.auth.transport.requests
    except ImportError:
        pass
    else:
        try:
            creds, _ = google.auth.default(scopes=[SCOPE])
            creds.refresh(google.auth.transport.requests.Request())
        except Exception as err:  # noqa: BLE001 -- google-auth raises many kinds
            raise GcsError(f"no Google Cloud credentials ({err})") from err
        expiry = creds.expiry.timestamp() if getattr(creds, "expiry", None) else time.time() + 3000
        return creds.token, expiry
    conn = http.client.HTTPConnection(_METADATA[0], timeout=3)
    try:
        conn.request("GET", _METADATA[1], headers={"Metadata-Flavor": "Google"})
        res = conn.getresponse()
        data = json.loads(res.read()) if res.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        data = None
    finally:
        conn.close()
    if not data:
        raise GcsError("no Google Cloud credentials: not on GCP and google-auth is not installed; "
                       f"{install_hint('gcs')} and set GOOGLE_APPLICATION_CREDENTIALS, or "
                       "set CLOUDSDK_AUTH_ACCESS_TOKEN")
    return data["access_token"], time.time() + float(data.get("expires_in", 300))
