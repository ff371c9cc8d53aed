"""graphfreeze from Python, in a checkpoint's folder: inspect it, convert it to two targets, scan
it, catch a bad request, and run a batch. (docs/examples.py runs this for docs/python-api.md.)"""

from graphfreeze import batch
from graphfreeze.convert import Request, convert
from graphfreeze.errors import GraphFreezeError
from graphfreeze.inspect.report import inspect
from graphfreeze.inspect.scan import scan


def main() -> None:
    report = inspect("model.ckpt-200")  # what `freeze inspect --json` prints, as a dict
    print("inspect:", report["kind"], [t["name"] for t in report["outputs"]], report["flags"])

    written = convert(Request(source="model.ckpt-200", outputs=("probs",),
                              targets=("android", "tflite"), output="out/"))
    for w in written:  # one per target: its path and sidecar (graphfreeze.sidecar.Sidecar)
        check = w.sidecar.verification
        print("convert:", w.target, w.path, w.sidecar.bytes, "bytes, passed", check["passed"],
              "max |diff|", check["max_abs_diff"])

    for scanned in scan(["."]):  # what `freeze scan .` checks
        print("scan:", scanned.path, scanned.kind, scanned.findings)

    try:
        convert(Request(source="model.ckpt-200", outputs=("prob",)))
    except GraphFreezeError as err:  # InputError (exit code 3), OutputError (4), ...
        print("error:", type(err).__name__, err.exit_code, err)

    # what `freeze batch model.ckpt-200 --outputs probs --out-dir dist --no-cache` runs
    result = batch.run(paths=["model.ckpt-200"], options={"outputs": ["probs"], "out_dir": "dist"},
                       jobs=1, cache=None)
    for job in result.jobs:
        print("batch:", job.name, job.status, [a.path for a in job.artifacts])


if __name__ == "__main__":  # batch workers are started with `spawn`: they import this file
    main()
