"""The weight types of the litert-lm targets: float32 and fp16 (TFLiteConverter), dynamic int8
(per channel) and int4 (block-wise, 32 or 128) by LiteRT's own quantizer, ai-edge-quantizer."""

from __future__ import annotations

WEIGHTS = ("float32", "fp16", "int8", "int4")
BLOCK_SIZES = (32, 128)


def quantized(flatbuffer: bytes, weights: str, block_size: int) -> bytes:
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
    return bytes(q.quantize().quantized_model)
