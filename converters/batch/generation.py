"""The reports' language-model rows: what verify_generation judged of each litert-lm and
onnx-lm artifact of a batch (report.html and report.md show the same)."""

from __future__ import annotations

from graphfreeze.batch.results import Report


def generation(report: Report) -> list[tuple[str, str, dict]]:
    """(job, target, cells) of every artifact verified by the tokens it generates (the
    litert-lm targets): token agreement (and the least wanted), decode tokens/s (the median
    over the prompts), logits max |diff|, the prompts' lengths and new tokens."""
    found = []
    for job in report.jobs:
        for a in job.artifacts:
            check = (a.sidecar or {}).get("verification") or {}
            if "token_agreement" not in check:
                continue
            speed = check.get("tokens_per_second")
            found.append((job.name, a.target, {
                "token agreement": f"{check['token_agreement']:.1%} (at least "
                                   f"{check.get('min_token_agreement', 0):.0%})",
                "decode tokens/s": f"{speed:.0f}" if speed is not None else "",
                "logits max |diff|": f"{check.get('max_abs_diff', 0):.2g}",
                "prompts": ", ".join(str(p["prompt_tokens"]) for p in check.get("prompts") or [])
                + f" tokens, {check.get('new_tokens', '?')} new"}))
    return found
