"""Model sources: each kind of model on disk is a `plugins.Source`; plugins add kinds through
the entry-point group `graphfreeze.sources`."""

from __future__ import annotations


def builtin_sources() -> list:
    from graphfreeze.sources import checkpoint, frozen, keras_model, saved_model

    return [checkpoint.SOURCE, saved_model.SOURCE, keras_model.SOURCE, frozen.SOURCE]
