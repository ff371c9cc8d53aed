"""The import check of a run's graph (does TensorFlow's importer take it?), a future in the run's
memo: passed here, or sent to the TensorFlow child and said when it answers."""

from __future__ import annotations

from graphfreeze.errors import InputError

KEY = "import_check"


def passed(memo: dict) -> None:
    """The graph was checked here (graph/checks/validate_values.checked_here)."""
    from concurrent.futures import Future

    done = Future()
    done.set_result(None)
    memo[KEY] = done


def submit(memo: dict, check, *args) -> None:
    """`check(*args)` sent to the run's TensorFlow child; an answer already there is said now."""
    from graphfreeze.process import tensorflow_child

    memo[KEY] = tensorflow_child.submit(memo, check, *args)
    if memo[KEY].done():
        memo[KEY].result()


def raise_failed(memo: dict, stage_failed: bool = False) -> None:
    """The import check's error, if it failed; after a stage failed, only its InputError (a
    broken graph is said as TensorFlow's importer says it, before what it broke downstream)."""
    error = memo[KEY].exception()
    if error is not None and (not stage_failed or isinstance(error, InputError)):
        raise error
