"""Lookup tables, string, token and ragged inputs (issue 24), through the real CLI in each
model's folder: tables frozen into the graph and run by every target a peer reaches, verified
on seeded data drawn from the graph; bad data one line naming the input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.e2e.test_bad_input import assert_failed

SUFFIX = {"android": ".pb", "server": ".savedmodel", "tflite": ".tflite",
          "tflite-fp16": ".tflite-fp16.tflite", "tflite-dynamic": ".tflite-dynamic.tflite",
          "edge-int8": ".edge-int8.tflite", "onnx": ".onnx", "openvino": ".xml"}


def _in_folder(family, monkeypatch, name: str):
    path, args = family(name)
    monkeypatch.chdir(path.parent)
    return path.name, args


@pytest.mark.parametrize("name,targets", [
    # string, int64 keys; a string output (openvino: openvino-tokenizers' tables, string I/O)
    ("static_hash_table", "android,server,openvino"),
    # edge-int8: calibrated in LiteRT, which takes strings and fills the tables first
    ("keras_string_lookup",
     "android,server,tflite,tflite-fp16,tflite-dynamic,edge-int8,onnx,openvino"),
    # TFLiteConverter takes the row splits too (matched by name: TFLite lists them reversed);
    # tf2onnx leaves the output's shape out (the ONNX export fills it in from ONNX's shape
    # inference, as onnx.checker asks); OpenVINO reads a scalar Const whose shape is present
    ("ragged_lookup", "android,server,tflite,edge-int8,onnx,openvino"),
    # a table the loader filled (TFLiteConverter's own int8 of it: every lookup missed)
    ("tf1_table_savedmodel", "android,server,tflite,edge-int8,onnx,openvino"),
    # StaticRegexReplace, StringSplitV2 on " ": onnxruntime-extensions' ops in ONNX
    ("string_split", "android,server,onnx"),
])
def test_a_model_with_lookup_tables_converts_and_verifies(family, freeze, monkeypatch, name,
                                                          targets):
    from tensorflow.core.framework import graph_pb2

    path, args = _in_folder(family, monkeypatch, name)
    result = freeze(path, *args, "--target", targets, "-o", "out/")
    assert result.exit_code == 0, result.output
    for target in targets.split(","):
        with open(f"out/{path}{SUFFIX[target]}.json") as f:
            car = json.load(f)
        assert car["verification"]["passed"], (target, car["verification"])
    if "openvino" in targets:  # the tables and string ops are openvino-tokenizers' ops
        with open(f"out/{path}.xml.json") as f:
            assert json.load(f)["op_libraries"] == ["openvino-tokenizers"]
    graph = graph_pb2.GraphDef()
    with open(f"out/{path}.pb", "rb") as f:
        graph.ParseFromString(f.read())
    ops = {n.name: n.op for n in graph.node}
    assert ops["init_all_tables"] == "NoOp" and "LookupTableImportV2" in ops.values()
    assert not [n.name for n in graph.node if n.op == "Placeholder" and n.attr["dtype"].type == 20]


@pytest.mark.parametrize("name,op,compiles", [
    ("keras_text_vectorization", "StringSplitV2", True),  # on whitespace: characters in ONNX
    # another hash function in ONNX; OpenVINO's CPU plugin makes the hash's int64 an int32 on one
    # side of the embedding's Select only, and cannot compile it (openvino.convert_model's too)
    ("keras_hashing", "StringToHashBucketFast", False),
])
def test_keras_string_layers_on_openvino_and_onnx_refusing_what_it_computes_otherwise(
        family, freeze, monkeypatch, name, op, compiles):
    path, args = _in_folder(family, monkeypatch, name)
    result = freeze(path, *args, "--target", "openvino", "-o", "ov/", "--benchmark")
    if compiles:  # strings fed as bytes to verification and --benchmark alike
        assert result.exit_code == 0 and "latency: median" in result.output, result.output
        with open(f"ov/{path}.xml.json") as f:
            car = json.load(f)
        assert car["verification"]["passed"] and car["op_libraries"] == ["openvino-tokenizers"]
        assert "import openvino_tokenizers" in result.output, result.output
    else:
        assert_failed(result, 5, "OpenVINO cannot compile it (node '", "SelectV2': Argument 1")
    assert_failed(freeze(path, *args, "--target", "onnx", "-o", "onnx/"),
                  3, f"({op})", "onnxruntime-extensions", "openvino target")


def test_int8_calibrated_in_litert_names_the_ops_left_float(family, freeze, monkeypatch):
    path, args = _in_folder(family, monkeypatch, "ragged_lookup")
    result = freeze(path, *args, "--target", "edge-int8", "-o", "i8/")
    assert result.exit_code == 0, result.output  # the ragged sums have no int8 kernel
    assert "edge-int8: 2 op(s) stay float (UNSORTED_SEGMENT_SUM" in result.output, result.output


def test_a_mutable_table_is_refused_naming_its_lookup(family, freeze, monkeypatch):
    path, _ = _in_folder(family, monkeypatch, "static_hash_table")
    result = freeze(path, "--signature", "mutable", "--target", "android", "-o", "mutable/")
    assert_failed(result, 3, "LookupTableFindV2", "MutableHashTable", "StaticHashTable")


def test_string_data_verifies_and_bad_strings_are_one_line(family, freeze, monkeypatch):
    path, args = _in_folder(family, monkeypatch, "static_hash_table")
    np.savez("words.npz", color=np.array(["Red", "blue", "Grün"]), code=np.array([3, 42, 5]))
    np.savez("latin1.npz", color=np.array([b"Red", b"bl\xfcue", b"x"]), code=np.array([3, 4, 5]))
    np.savez("rank.npz", color=np.array([["red", "blue"]]), code=np.array([3]))
    result = freeze(path, "--target", "android", "--verify-data", "words.npz",
                    "--save-golden", "golden", "-o", "ok/")
    assert result.exit_code == 0, result.output
    with open(f"ok/{path}.pb.json") as f:
        assert json.load(f)["verification"]["passed"]
    result = freeze("verify", f"ok/{path}.pb", "--golden", "golden")  # strings kept as bytes
    assert result.exit_code == 0 and "passed" in result.output, result.output
    assert_failed(freeze(path, "--target", "android", "--verify-data", "latin1.npz", "-o", "b/"),
                  3, "latin1.npz", "'color:0'", "not UTF-8", "StringLower")
    assert_failed(freeze(path, "--target", "android", "--verify-data", "rank.npz", "-o", "b/"),
                  3, "rank.npz", "'color:0' takes [?]")
    assert_failed(freeze(path, "--target", "edge-int16x8", "-o", "b/"),  # its calibrator crashes
                  3, "input 'color:0' is a string", "edge-int8")


def test_token_ids_verify_within_the_vocabulary_and_out_of_it_are_refused(family, freeze,
                                                                          monkeypatch):
    path, _ = _in_folder(family, monkeypatch, "static_hash_table")
    result = freeze(path, "--signature", "tokens", "--target", "android", "-o", "tokens/")
    assert result.exit_code == 0, result.output  # seeded ids 0..6: no gather out of range
    np.savez("ids.npz", tokens=np.array([[1, 2, 9]], dtype=np.int32))
    assert_failed(freeze(path, "--signature", "tokens", "--target", "android", "--verify-data",
                         "ids.npz", "-o", "bad-ids/"),
                  3, "ids.npz", "token id 9", "'tokens:0'", "vocabulary of 7")
