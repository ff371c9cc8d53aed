"""The reference run started early: its inputs are known (and the artifact runs on them) before
the original's outputs are, and a failure to read the inputs is said by the reference itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from graphfreeze.convert import Request, initial_state, prepare
from graphfreeze.errors import InputError
from graphfreeze.stages import freeze_variables
from graphfreeze.stages.verify import reference
from graphfreeze.stages.verify.options import VerifyOptions
from graphfreeze.tensors import io_infos


def _frozen_state(model_dir, tmp_path):
    prepared = prepare(Request(str(model_dir / "model.ckpt-200"), outputs=("probs",),
                               targets=("android",), output=str(tmp_path / "out.pb")))
    model = prepared.source.load(prepared.request.source, prepared.source_options, False)
    return freeze_variables.run(initial_state(prepared.request, model), None)


def test_the_inputs_come_before_the_original_has_run_and_are_the_references(samples,
                                                                            tmp_path):
    state = _frozen_state(samples / "iris", tmp_path)
    data = tmp_path / "x.npz"
    rows = np.random.default_rng(1).standard_normal((130, 4)).astype(np.float32)
    np.savez(data, x=rows)
    options = dataclasses.replace(VerifyOptions(), verify_data=str(data), rows_per_run=64)
    reference.prepare(state, options)
    feeds, per_run = reference.started_inputs(state, options)
    ref = reference.shared(state, options, io_infos(state)[0])
    assert ref.feeds is feeds and per_run == ref.run_rows == 64
    np.testing.assert_array_equal(feeds["x:0"], rows)
    assert ref.expected[0].shape == (130, 3)
    # the same outputs as the original run in one go, on the same rows
    whole = reference.original_outputs(state, {"x:0": rows}, 130)
    np.testing.assert_allclose(ref.expected[0], whole[0], atol=1e-6)


def test_unreadable_data_is_said_by_the_reference_not_the_early_run(samples, tmp_path):
    state = _frozen_state(samples / "iris", tmp_path)
    options = dataclasses.replace(VerifyOptions(), verify_data=str(tmp_path / "missing.npz"))
    reference.prepare(state, options)
    assert reference.started_inputs(state, options) is None
    with pytest.raises(InputError, match="missing.npz"):
        reference.shared(state, options, io_infos(state)[0])


def test_without_a_start_there_are_no_early_inputs_and_the_reference_runs_at_once(samples,
                                                                                 tmp_path):
    state = _frozen_state(samples / "iris", tmp_path)
    options = VerifyOptions()
    assert reference.started_inputs(state, options) is None
    ref = reference.shared(state, options, io_infos(state)[0])
    assert ref.where == "seeded inputs" and reference.started_inputs(state, options) is None
