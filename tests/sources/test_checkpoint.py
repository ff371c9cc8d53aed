import pytest
from graphfreeze.errors import InputError
from graphfreeze.sources.checkpoint import CheckpointModel, locate, saver_variables


def test_locate_prefix_dir_and_file_suffixes(samples):
    model_dir = samples / "iris"
    prefix = str(model_dir / "model.ckpt-200")
    assert locate(str(model_dir)).prefix == prefix
    assert locate(prefix + ".meta").prefix == prefix
    assert locate(prefix + ".index").meta == prefix + ".meta"
    assert locate(str(model_dir), step=200).prefix == prefix


def test_a_prefix_spelled_with_a_double_slash_finds_its_shards(sample):
    """`--ckpt iris//model.ckpt-200` (typed, or joined by a script): its data shard is found
    (it was "shard missing"); a shard that is really missing is still said."""
    model_dir = sample("iris")
    prefix = f"{model_dir}//model.ckpt-200"
    assert CheckpointModel(prefix).prefix == prefix
    next(model_dir.glob("*.data-*")).rename(model_dir / "model.ckpt-200.data-00000-of-00002")
    with pytest.raises(InputError, match=r"model.ckpt-200.data-00001-of-00002: checkpoint data "
                                         "shard missing; copy all 2 shards"):
        CheckpointModel(prefix)


def test_state_file_naming_a_missing_checkpoint(sample):
    model_dir = sample("iris")
    (model_dir / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-7"\n')
    with pytest.raises(InputError, match=r"checkpoint: names .*model.ckpt-7, which is not there"):
        locate(str(model_dir))


def test_partitioned_variables_map_to_slices_of_one_key(samples):
    model = CheckpointModel(str(samples / "iris_partitioned"))
    specs = {name: spec for name, spec in model.variables.items() if "hidden1/kernel/part" in name}
    assert {s.key for s in specs.values() if not s.node.endswith(("Adam", "Adam_1"))} == \
        {"dnn/hidden1/kernel"}
    part = specs["dnn/hidden1/kernel/part_0"]
    assert part.slice.startswith("4 16 ") and part.shape == (2, 16)
    values = dict(model.read_variables(["dnn/hidden1/kernel/part_0",
                                        "dnn/hidden1/kernel/part_1"]))
    assert [v.shape for v in values.values()] == [(2, 16), (2, 16)]


def test_only_needed_variables_are_read(samples):
    model = CheckpointModel(str(samples / "iris"))
    read = dict(model.read_variables(["dnn/logits/bias"]))
    assert list(read) == ["dnn/logits/bias"] and read["dnn/logits/bias"].shape == (3,)


def test_saver_keys_come_from_the_restore_ops(samples):
    model = CheckpointModel(str(samples / "iris_resource"))
    specs = saver_variables(model.meta_graph)
    assert specs["global_step"].key == "global_step"
    assert all(spec.key == name for name, spec in specs.items())


@pytest.mark.parametrize("damage", [
    lambda data: b"\0" + data,  # block checksum mismatch
    lambda data: data[:134] + bytes(200) + data[334:],
    lambda data: data[:-2],  # not an sstable (bad magic number)
    lambda data: data[:70] + data[127:],  # IndexError inside TensorFlow's reader
])
def test_corrupt_index_is_an_input_error(sample, damage):
    """Fuzzing found: `freeze inspect` on a corrupt .index was an internal error."""
    from graphfreeze.sources.checkpoint import SOURCE, CheckpointOptions

    model_dir = sample("iris")
    index = model_dir / "model.ckpt-200.index"
    index.write_bytes(damage(index.read_bytes()))
    with pytest.raises(InputError, match=r"model.ckpt-200.index: not a readable checkpoint index"):
        SOURCE.describe(str(model_dir / "model.ckpt-200"), CheckpointOptions(), False)
    model = CheckpointModel(str(model_dir / "model.ckpt-200"))
    with pytest.raises(InputError, match=r"\.index: not a readable checkpoint index .*re-copy"):
        model.check_variables(["dnn/logits/bias"])
