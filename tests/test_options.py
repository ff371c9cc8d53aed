"""parse_options: stage and source options built strictly from TOML/CLI values."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from graphfreeze.errors import ConfigError
from graphfreeze.options import NoOptions, option_names, parse_options


@dataclass(frozen=True)
class Opts:
    rate: float = 1.0
    count: int = 3
    enabled: bool = False
    names: tuple[str, ...] = ()
    sizes: tuple[int, ...] = (1,)
    limit: int | None = None
    label: str | None = None
    ratio: float | None = None


@dataclass(frozen=True)
class Checked:
    low: int = 0
    high: int = 10

    def __post_init__(self):
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")


def parse(raw: dict, cls=Opts):
    return parse_options(cls, raw, "target 't', stage 's'")


def test_defaults_and_exact_types_pass_through():
    assert parse({}) == Opts()
    got = parse({"rate": 0.5, "count": 7, "enabled": True, "names": ["a", "b"], "label": "x"})
    assert got == Opts(rate=0.5, count=7, enabled=True, names=("a", "b"), label="x")
    assert isinstance(got.names, tuple)


def test_int_becomes_float_but_never_the_reverse():
    got = parse({"rate": 2, "ratio": 3})
    assert got.rate == 2.0 and type(got.rate) is float
    assert got.ratio == 3.0 and type(got.ratio) is float  # inside Optional too
    assert parse({"rate": float("inf")}).rate == float("inf")  # TOML's inf
    with pytest.raises(ConfigError, match="option count must be an integer, got 2.5"):
        parse({"count": 2.5})
    with pytest.raises(ConfigError, match="option rate must be float, got '1.0'"):
        parse({"rate": "1.0"})


def test_bool_is_strict_both_ways():
    assert parse({"enabled": False}).enabled is False
    for value in (1, 0, "true", "yes", None):
        with pytest.raises(ConfigError, match=r"option enabled must be true or false, got "):
            parse({"enabled": value})
    with pytest.raises(ConfigError, match="option count must be an integer, got True"):
        parse({"count": True})  # bool is an int subclass, but not an integer option
    with pytest.raises(ConfigError, match="option rate must be float, got True"):
        parse({"rate": True})


def test_tuples_take_lists_and_check_each_item():
    assert parse({"sizes": [4, 5]}).sizes == (4, 5)
    assert parse({"sizes": (6,)}).sizes == (6,)
    assert parse({"names": []}).names == ()
    with pytest.raises(ConfigError, match="option sizes must be a list, got 4"):
        parse({"sizes": 4})
    with pytest.raises(ConfigError, match="option names must be a list, got 'abc'"):
        parse({"names": "abc"})  # a string is no list of strings
    with pytest.raises(ConfigError, match="option sizes must be an integer, got 'x'"):
        parse({"sizes": [1, "x"]})


def test_optional_takes_none_or_the_type():
    assert parse({"limit": None}).limit is None
    assert parse({"limit": 5}).limit == 5
    assert parse({"label": None, "ratio": None}) == Opts()
    with pytest.raises(ConfigError, match="option limit must be an integer, got 'five'"):
        parse({"limit": "five"})
    with pytest.raises(ConfigError, match="option label must be str, got 3"):
        parse({"label": 3})


def test_unknown_option_names_the_known_ones():
    with pytest.raises(ConfigError) as err:
        parse({"rat": 1.0, "zzz": 1})
    message = str(err.value)
    assert message.startswith("target 't', stage 's': unknown option rat, zzz (options: ")
    assert "count, enabled, label, limit, names, rate, ratio, sizes)" in message
    with pytest.raises(ConfigError, match=r"unknown option x \(options: none\)"):
        parse_options(NoOptions, {"x": 1}, "stage 'verify'")
    assert parse_options(NoOptions, {}, "stage") == NoOptions()


def test_post_init_value_error_becomes_a_config_error():
    assert parse({"low": 2, "high": 3}, Checked) == Checked(2, 3)
    with pytest.raises(ConfigError, match=r"^target 't', stage 's': low 5 is above high 1$") as err:
        parse({"low": 5, "high": 1}, Checked)
    assert isinstance(err.value.__cause__, ValueError)
    assert err.value.exit_code == 6


def test_real_stage_options_check_their_values():
    from graphfreeze.formats.tflite.export import TFLiteOptions

    with pytest.raises(ConfigError, match="quantize 'int4': choose one of none, fp16, dynamic, "
                                          "int8"):
        parse_options(TFLiteOptions, {"quantize": "int4"}, "stage 'export_tflite'")
    got = parse_options(TFLiteOptions, {"quantize": "int8", "calibration_samples": 10}, "s")
    assert got.quantize == "int8" and got.calibration_samples == 10 and got.calibration is None


def test_option_names():
    assert option_names(Checked) == {"low", "high"}
    assert option_names(NoOptions) == set()


def test_a_refused_value_is_named_as_the_user_spelled_it(tmp_path, freeze, samples):
    """One option, three spellings: the key of a target TOML, the flag on the command line,
    the key (and line) in a manifest."""
    from graphfreeze.formats.onnx.export import OnnxOptions

    with pytest.raises(ConfigError, match=r"^targets/onnx.toml: opset 999: this install converts"):
        parse_options(OnnxOptions, {"opset": 999}, "targets/onnx.toml")
    with pytest.raises(ConfigError, match=r"^x: --opset 999: this install converts"):
        parse_options(OnnxOptions, {"opset": 999}, "x", lambda name: "--" + name)
    ckpt = samples / "iris" / "model.ckpt-200"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "onnx", "--opset", "999",
                    "-o", tmp_path / "m.onnx")
    assert result.exit_code == 6 and "--opset 999: this install converts" in result.stderr
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--tolerance", "-1",
                    "-o", tmp_path / "m.pb")
    assert result.exit_code == 6 and "--tolerance -1: give a number >= 0" in result.stderr
    (tmp_path / "models.toml").write_text(
        f'schema_version = 1\n[[model]]\nsource = "{ckpt}"\noutputs = "probs"\n'
        'targets = ["onnx"]\nopset = 999\n')
    result = freeze("batch", tmp_path / "models.toml")
    assert result.exit_code == 6
    assert "models.toml:2: " in result.stderr and ": opset 999: this install" in result.stderr


def test_the_cache_key_hashes_the_fields_declared_to_feed_it():
    from dataclasses import dataclass

    from graphfreeze.batch.cache import keyed_options
    from graphfreeze.options import option

    @dataclass(frozen=True)
    class Logged:
        level: int = option(1, cache=False)  # changes no output byte
        size: int = option(2)

    assert keyed_options(Logged(level=5, size=3)) == keyed_options(Logged(level=1, size=3))
    assert keyed_options(Logged(size=3)) != keyed_options(Logged(size=4))
