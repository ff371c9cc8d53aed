"""A custom activation and layer registered under a package prefix (`kecam>...`), as
keras-cv-attention-models registers its own: `--custom-objects prefixed_layers:Scale`
(put models/ on PYTHONPATH)."""

import keras


@keras.saving.register_keras_serializable(package="kecam")
def hard_swish(x):
    return x * keras.ops.relu6(x + 3.0) / 6.0


@keras.saving.register_keras_serializable(package="kecam")
class Scale(keras.layers.Layer):
    """Multiplies by a learned scalar."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")

    def call(self, x):
        return x * self.scale
