"""The words `freeze` prints that need one: listed by `freeze --help` ("Terms in the output") and
said once under the output that uses them (show.py). No imports: --help reads it."""

CONVERT = ("freeze convert", "the default command: `freeze PATH ...` is `freeze convert PATH ...`")
GPU = ("gpu: N/M ops", "of the .tflite's ops, those LiteRT's GPU delegate takes (by its "
       "compatibility rules); the rest run on the CPU (`freeze inspect --device gpu FILE` "
       "lists them)")
RMSE_SCALE = ("rmse/scale", "a quantized layer's error in int8 steps (its rmse over its "
              "scale): about 0.29 is rounding alone; far above 1, keep the layer in float "
              "(--keep-float)")
CHECKED_OPS = ("all checked ops convert", "every op type of the inference graph was tried in "
               "the format's converter and none was refused")
TERMS = (CONVERT, GPU, RMSE_SCALE, CHECKED_OPS)


def line(term: tuple[str, str]) -> str:
    """`term: meaning`, as printed under the output that uses it."""
    return f"{term[0]}: {term[1]}"
