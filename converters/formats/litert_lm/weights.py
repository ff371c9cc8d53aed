"""The weight types of the litert-lm targets: float32 and fp16 (TFLiteConverter), dynamic int8
(per channel) and int4 (block-wise, 32 or 128) by LiteRT's own quantizer, ai-edge-quantizer."""

from __future__ import annotations

from graphfreeze.errors import InputError, first_line

WEIGHTS = ("float32", "fp16", "int8", "int4")
BLOCK_SIZES = (32, 128)


def quantized(flatbuffer: bytes, weights: str, block_size: int, where: str) -> bytes:
    """`flatbuffer` with its weights as `weights` says (float32 and fp16 come out of the
    converter as they are): every op ai-edge-quantizer supports, activations float32,
    quantized on the fly (dynamic range), as LiteRT-LM's recipes do."""
    if weights in ("float32", "fp16"):
        return flatbuffer
    from ai_edge_quantizer import qtyping, quantizer

    granularity = qtyping.QuantGranularity.CHANNELWISE if weights == "int8" else \
        getattr(qtyping.QuantGranularity, f"BLOCKWISE_{block_size}")
    q = quantizer.Quantizer(bytearray(flatbuffer))
    q.add_dynamic_config(".*", qtyping.TFLOperationName.ALL_SUPPORTED,
                         8 if weights == "int8" else 4, granularity)
    try:
        result = q.quantize(enable_progress_bar=False, enable_progress_report=False)
    except ValueError as err:  # a dimension the block size does not divide, named
        raise InputError(f"{where}: ai-edge-quantizer cannot quantize it to {weights} "
                         f"({first_line(err)}); give --block-size 32 or another target") from err
    return bytes(result.quantized_model)
