"""What of the web format the batch cache key holds beyond Python's distributions: the npm
runtimes' versions (an onnxruntime-web upgrade converts again, as a tf2onnx upgrade does)."""

from __future__ import annotations


def versions() -> dict[str, str | None]:
    """{npm package: its installed version, or None}, read from node_modules' package.json."""
    from graphfreeze.errors import ConfigError
    from graphfreeze.formats.web.runtimes import RUNTIMES, version

    found = {}
    for runtime in RUNTIMES.values():
        try:
            found[runtime.package] = version(runtime)
        except ConfigError:  # not installed: the run says so; the key says None
            found[runtime.package] = None
    return found
