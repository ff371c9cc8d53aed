"""verify_generation: a language model judged as users judge one (the litert-lm and onnx-lm
targets). Seeded prompts of several lengths, greedy generation of N new tokens by the artifact's
own prefill + decode loop (its session's `generate`) against the original Keras model's greedy
`generate`: the share of identical tokens (float32 and fp16 must give the same tokens: their
target's `min_token_agreement` is 1) and each step's logits, the artifact fed the original's
tokens so both see the same sequence."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

from graphfreeze.errors import InputError, RunError, VerificationError
from graphfreeze.lm.layout import of_run
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Stage

SEED = 0


@dataclass(frozen=True)
class GenerationOptions:
    max_new_tokens: int = option(32, flag="--max-new-tokens", metavar="N",
                                 help="litert-lm, onnx-lm: tokens generated per prompt to verify.")
    min_token_agreement: float = option(
        1.0, flag="--min-token-agreement", metavar="SHARE",
        help="litert-lm, onnx-lm: the share of generated tokens that must match the original's "
             "(default 1 for float32/fp16, 0.5 for int8/int4).")

    def __post_init__(self):
        if self.max_new_tokens < 1:
            raise OptionValueError("max_new_tokens", self.max_new_tokens, "give at least 1")
        if not 0 <= self.min_token_agreement <= 1:
            raise OptionValueError("min_token_agreement", self.min_token_agreement,
                                   "give a share from 0 to 1")


def prompts(layout: dict, lengths, new_tokens: int, where: str) -> list[list[int]]:
    """Seeded prompts: a short one and one of each length (a litert-lm model's prefill lengths,
    so every prefill signature runs), each leaving room for the new tokens in the cache."""
    import numpy as np

    room = layout["cache_len"] - new_tokens
    if room < 1:
        raise InputError(f"{where}: --max-cache-len {layout['cache_len']} leaves no room for a "
                         f"prompt and {new_tokens} new tokens; give a longer cache or fewer "
                         "--max-new-tokens")
    lengths = sorted({min(4, room), *(min(t, room) for t in lengths)})
    rng = np.random.default_rng(SEED)
    return [rng.integers(0, layout["vocab_size"], size=n).tolist() for n in lengths]


def original(model, prompt: list[int], new_tokens: int):
    """(tokens, per-step logits) of the Keras model: its greedy `generate`, then its forward
    pass on the sequence it made."""
    import numpy as np

    model.compile(sampler="greedy")
    ids = np.zeros([1, len(prompt) + new_tokens], np.int32)
    ids[0, :len(prompt)] = prompt
    mask = np.zeros(ids.shape, bool)
    mask[0, :len(prompt)] = True
    made = model.generate({"token_ids": ids, "padding_mask": mask}, stop_token_ids=None)
    tokens = np.asarray(made["token_ids"])[0, len(prompt):].astype(int).tolist()
    full = np.asarray(made["token_ids"]).astype(np.int32)
    logits = np.asarray(model({"token_ids": full, "padding_mask": np.ones(full.shape, bool)}))
    return tokens, logits[0, len(prompt) - 1:len(prompt) - 1 + new_tokens]


def metrics(got, want, agreement: float) -> dict:
    """Each step's logits against the original's, as every target's verification reports an
    output (top-1 agreement: the generated tokens')."""
    import numpy as np

    diff = (got - want).astype(np.float64)
    norms = float(np.linalg.norm(got) * np.linalg.norm(want))
    return {"max_abs_diff": float(np.max(np.abs(diff))), "mean_abs_diff": float(np.mean(
        np.abs(diff))), "rmse": float(np.sqrt(np.mean(diff ** 2))),
            "cosine": float(np.sum(got * want) / norms) if norms else 1.0,
            "top1_agreement": agreement}


def run(state, options: GenerationOptions):
    import numpy as np

    artifact, where = state.artifact, state.model.location
    model = of_run(state)
    try:
        session = artifact.open()
    except RunError as err:
        raise VerificationError(f"{artifact.path}: {err}; nothing written") from err
    cases, same, total, got, wanted = [], 0, 0, [], []
    for prompt in prompts(artifact.facts["layout"], artifact.facts.get("prompt_lengths", (8, 32)),
                          options.max_new_tokens, where):
        want, want_logits = original(model, prompt, options.max_new_tokens)
        try:
            free = session.generate(prompt, options.max_new_tokens)
            forced = session.generate(prompt, options.max_new_tokens, forced=want)
        except RunError as err:
            raise VerificationError(f"{artifact.path}: {err}; nothing written") from err
        diff = float(np.max(np.abs(np.stack(forced.logits) - want_logits)))
        agree = sum(a == b for a, b in zip(free.tokens, want, strict=True))
        same, total = same + agree, total + len(want)
        got.append(np.stack(forced.logits))
        wanted.append(want_logits)
        cases.append({"prompt_tokens": len(prompt), "agreement": agree / len(want),
                      "logits_max_abs_diff": diff, "tokens_per_second": free.tokens_per_second()})
    share = same / total
    speeds = [c["tokens_per_second"] for c in cases if c["tokens_per_second"] is not None]
    logits = metrics(np.concatenate(got), np.concatenate(wanted), share)
    worst = logits["max_abs_diff"]
    report = {"passed": share >= options.min_token_agreement, "token_agreement": share,
              "min_token_agreement": options.min_token_agreement, "max_abs_diff": worst,
              "new_tokens": options.max_new_tokens, "prompts": cases,
              "tokens_per_second": statistics.median(speeds) if speeds else None,
              "metrics": {"logits": logits}}
    if not report["passed"]:
        raise VerificationError(
            f"{artifact.path}: {share:.0%} of generated tokens match the original's greedy "
            f"generation (at least {options.min_token_agreement:.0%} wanted; logits max |diff| "
            f"{worst:.3g}); nothing written. Pass --min-token-agreement X or --no-verify")
    artifact = dataclasses.replace(artifact, facts={**artifact.facts, "verification": report})
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("verify_generation", run, "artifact", "artifact", GenerationOptions,
              "greedy generation against the original's: token agreement, logits |diff|")
