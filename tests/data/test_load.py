"""Reading the user's data: .npz, folders of .npy/.npz, folders of images; each bad input one
line naming the file, the array and the input."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.data import load
from graphfreeze.data.options import DataOptions
from graphfreeze.errors import InputError
from graphfreeze.options import OptionValueError
from graphfreeze.tensors import TensorInfo

X = TensorInfo("x:0", "float32", (None, 4))
IMAGE = TensorInfo("image:0", "float32", (None, 8, 8, 3))
SCALE = DataOptions().image_scaling()


def test_an_npz_by_input_name_node_name_or_its_only_array(tmp_path):
    rng = np.random.default_rng(0)
    for key in ("x:0", "x", "whatever"):
        path = tmp_path / f"{key.replace(':', '_')}.npz"
        np.savez(path, **{key: rng.standard_normal((5, 4))}, labels=np.arange(5) % 3)
        data = load(str(path), [X], SCALE)
        assert data.count == 5 and data.inputs["x:0"].dtype == np.float32
        assert data.labels.tolist() == [0, 1, 2, 0, 1]
    one_hot = tmp_path / "one_hot.npz"
    np.savez(one_hot, x=np.zeros((2, 4)), labels=np.eye(3)[[2, 0]])
    assert load(str(one_hot), [X], SCALE).labels.tolist() == [2, 0]
    single = tmp_path / "one.npz"
    np.savez(single, np.zeros(4, np.float32))  # one sample without its batch dim
    assert load(str(single), [X], SCALE).inputs["x:0"].shape == (1, 4)


def test_folders_of_npy_per_input_or_npz_per_sample(tmp_path):
    per_input = tmp_path / "per_input"
    per_input.mkdir()
    np.save(per_input / "x.npy", np.ones((3, 4)))
    np.save(per_input / "labels.npy", np.array([0, 1, 1]))
    data = load(str(per_input), [X], SCALE)
    assert data.count == 3 and data.labels.tolist() == [0, 1, 1]
    per_sample = tmp_path / "per_sample"
    per_sample.mkdir()
    for k in range(4):
        np.savez(per_sample / f"{k}.npz", x=np.full(4, k, np.float32), labels=np.int64(k % 2))
    data = load(str(per_sample), [X], SCALE)
    assert data.inputs["x:0"][:, 0].tolist() == [0, 1, 2, 3] and data.labels.tolist() == [0, 1, 0, 1]


def test_a_folder_of_images_is_decoded_resized_scaled_and_labelled_by_sub_folder(tmp_path):
    import tensorflow as tf

    for k, name in enumerate(("0_red", "1_green")):
        (tmp_path / name).mkdir()
        for j in range(2):
            pixels = np.zeros((16, 12, 3), np.uint8)
            pixels[..., k] = 255
            (tmp_path / name / f"{j}.png").write_bytes(tf.io.encode_png(pixels).numpy())
    scaling = DataOptions(image_scale="1/127.5", image_mean="1").image_scaling()
    data = load(str(tmp_path), [IMAGE], scaling)
    assert data.inputs["image:0"].shape == (4, 8, 8, 3) and data.classes == ("0_red", "1_green")
    assert data.labels.tolist() == [0, 0, 1, 1]
    assert np.allclose(data.inputs["image:0"][0, 0, 0], [1, -1, -1])  # (255/127.5 - 1), (0 - 1)
    first = TensorInfo("nchw:0", "float32", (None, 3, 8, 8))
    assert load(str(tmp_path), [first], scaling).inputs["nchw:0"].shape == (4, 3, 8, 8)
    np.save(tmp_path / "more.npy", np.zeros((3, 8, 8, 3), np.float32))  # one kind would be lost
    with pytest.raises(InputError, match=r"holds images \(0_red/0.png\) and arrays \(more.npy\); "
                                         r"keep one kind in the folder"):
        load(str(tmp_path), [IMAGE], scaling)


@pytest.mark.parametrize("case, message", [
    ("shape", r"x.npz: array 'x' has shape \[5, 3\], but input 'x:0' takes \[\?,4\]"),
    ("dtype", r"x.npz: array 'x' has dtype <U1, but input 'x:0' takes float32"),
    ("missing", r"x.npz: no array for input 'x' \(has: a, b\); name each array after its input"),
    ("empty", r"empty: an empty folder \(no .npz, .npy or image files"),
    ("image", r"bad.png: not a readable image"),
    ("not numpy", r"x.npz: not an .npz or .npy file"),
    ("truncated", r"x.npz: not an .npz or .npy file numpy reads \(File is not a zip file\)"),
    ("objects", r"x.npz: not an .npz or .npy file numpy reads \(object arrays, which graphfreeze "
                r"never unpickles\)"),
    ("labels", r"x.npz: 2 labels for 5 samples"),
    ("nothing", r"nowhere: not found"),
    ("mixed", r"images: has images both in class sub-folders and at its top \(loose.png\)"),
    ("not images", r"input 'x:0' is not an image batch \[N, H, W, C\]"),
])
def test_bad_data_is_one_line_naming_the_file_and_the_input(tmp_path, case, message):
    path = tmp_path / "x.npz"
    infos = [X]
    if case == "shape":
        np.savez(path, x=np.zeros((5, 3)))
    elif case == "dtype":
        np.savez(path, x=np.array([["a"] * 4] * 5))
    elif case == "missing":
        np.savez(path, a=np.zeros((5, 4)), b=np.zeros((5, 4)))
    elif case == "empty":
        path = tmp_path / "empty"
        path.mkdir()
    elif case == "image":
        path = tmp_path / "images"
        (path / "cats").mkdir(parents=True)
        (path / "cats" / "bad.png").write_bytes(b"not a png")
        infos = [IMAGE]
    elif case == "not numpy":
        path.write_text("hello")
    elif case == "truncated":
        np.savez(path, x=np.zeros((5, 4)))
        path.write_bytes(path.read_bytes()[:200])
    elif case == "objects":
        np.savez(path, x=np.array([{"a": 1}] * 5, dtype=object))
    elif case == "labels":
        np.savez(path, x=np.zeros((5, 4)), labels=np.array([1, 2]))
    elif case == "nothing":
        path = tmp_path / "nowhere"
    elif case in ("mixed", "not images"):
        import tensorflow as tf

        path = tmp_path / "images"
        (path / "cats").mkdir(parents=True)
        png = tf.io.encode_png(np.zeros((4, 4, 3), np.uint8)).numpy()
        (path / "cats" / "a.png").write_bytes(png)
        (path / "loose.png").write_bytes(png)
        infos = [IMAGE] if case == "mixed" else [X]
    with pytest.raises(InputError, match=message) as err:
        load(str(path), infos, SCALE)
    assert "\n" not in str(err.value)


def test_a_mean_per_channel_must_fit_the_images_channels(tmp_path):
    import tensorflow as tf
    from graphfreeze.errors import ConfigError

    (tmp_path / "a.png").write_bytes(tf.io.encode_png(np.zeros((4, 4, 3), np.uint8)).numpy())
    scaling = DataOptions(image_mean="0.4,0.5").image_scaling()
    with pytest.raises(ConfigError, match="--image-mean has 2 values for 3 channels"):
        load(str(tmp_path), [IMAGE], scaling)


def test_image_scaling_options_are_checked_with_the_plan():
    assert DataOptions(image_scale="1/255").image_scaling().scale == pytest.approx(1 / 255)
    assert DataOptions(image_mean="0.485,0.456,0.406").image_scaling().mean == (0.485, 0.456, 0.406)
    with pytest.raises(OptionValueError, match="image_scale"):
        DataOptions(image_scale="one")
    with pytest.raises(OptionValueError, match="cannot be 0"):
        DataOptions(image_std="0")


def test_numpy_bytes_and_unicode_arrays_feed_string_inputs(tmp_path):
    """numpy stores strings as `|S` (bytes) or `<U` (unicode) arrays: both feed a string
    input as the UTF-8 bytes TensorFlow takes."""
    color = TensorInfo("color:0", "string", (None,))
    np.savez(tmp_path / "u.npz", color=np.array(["red", "Grün"]))
    np.savez(tmp_path / "s.npz", color=np.array([b"red", b"blue"]))
    assert load(str(tmp_path / "u.npz"), [color], SCALE).inputs["color:0"].tolist() == \
        [b"red", "Grün".encode()]
    assert load(str(tmp_path / "s.npz"), [color], SCALE).inputs["color:0"].tolist() == \
        [b"red", b"blue"]


@pytest.mark.parametrize("case,info,value,message", [
    ("rank", TensorInfo("color:0", "string", (None,)), np.array([["a", "b"], ["c", "d"]]),
     ["'color:0' takes [?]", "shape [2, 2]"]),
    ("utf8", TensorInfo("text:0", "string", (None,), None), np.array([b"ok", b"bl\xffue"]),
     ["string 1", "not UTF-8", "'text:0'", "node 'lower'"]),
    ("vocabulary", TensorInfo("tokens:0", "int32", (None, 3), None), np.array([[1, 2, 9]]),
     ["token id 9", "'tokens:0'", "vocabulary of 7"]),
    ("splits", TensorInfo("words_1:0", "int64", (None,), None), np.array([0, 2, 1]),
     ["row splits", "'words:0'"]),
    ("numbers", TensorInfo("color:0", "string", (None,)), np.array([1.0, 2.0]),
     ["takes strings"]),
])
def test_bad_text_data_is_one_line_naming_the_input(tmp_path, case, info, value, message):
    from dataclasses import replace

    from graphfreeze.data.domains import Domain

    domain = {"utf8": Domain(utf8="lower"), "vocabulary": Domain(vocabulary=7),
              "splits": Domain(splits_of="words:0")}.get(case)
    info = replace(info, domain=domain)
    infos = [info] + ([TensorInfo("words:0", "string", (None,))] if case == "splits" else [])
    arrays = {info.name.split(":")[0]: value}
    if case == "splits":
        arrays["words"] = np.array(["a", "b", "c"])
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(InputError) as err:
        load(str(tmp_path / "d.npz"), infos, SCALE)
    assert "\n" not in str(err.value) and str(tmp_path / "d.npz") in str(err.value)
    for phrase in message:
        assert phrase in str(err.value), str(err.value)


def test_calibration_data_with_nan_is_refused(sample, freeze, monkeypatch):
    """NaN inputs calibrate no ranges (TFLite then leaves edge-int8 float, and the run passed):
    one line naming the file and the input, exit 3, nothing written; by the CLI."""
    folder = sample("iris")
    values = np.ones((8, 4), np.float32)
    values[3, 1] = np.nan
    np.savez(folder / "nan.npz", x=values)
    monkeypatch.chdir(folder)
    before = sorted(p.name for p in folder.iterdir())
    result = freeze("model.ckpt-200", "--outputs", "probs", "--target", "edge-int8",
                    "--calibration", "nan.npz", "-o", "m.tflite")
    assert result.exit_code == 3, result.output
    assert result.stderr == ("error: nan.npz: input 'x:0' holds NaN or Inf (1 values); calibrate "
                             "on the finite inputs the model sees in use\n")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_file_numpy_would_unpickle_is_refused_without_numpys_advice(tmp_path):
    """numpy suggests `allow_pickle=True` for a file it cannot read: not advice for a model's
    untrusted data."""
    (tmp_path / "notes.npz").write_text("some text, not arrays\n")
    from graphfreeze.data.load import read_arrays

    with pytest.raises(InputError) as err:
        read_arrays(str(tmp_path / "notes.npz"))
    assert "allow_pickle" not in str(err.value)
    assert str(err.value).endswith("notes.npz: not an .npz or .npy file numpy reads (numpy would "
                                   "have to unpickle it, which graphfreeze never does); save one "
                                   "with numpy.savez")
