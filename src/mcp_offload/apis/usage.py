"""Usage objects, API-neutral: copy one from a JSON answer, add several calls' up, read the figures the accounting
needs (`UsageFigures`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class UsageFigures:
    """The upstream's own usage figures for a turn, summed over its calls (API-neutral, for the accounting)."""

    input_tokens: int = 0  # every prompt token, cached or not
    output_tokens: int = 0
    cache_read_tokens: int = 0  # of the input tokens, those read from the prompt cache
    cache_write_tokens: int = 0  # of the input tokens, those written to it (Anthropic's cache_creation_input_tokens)

    @property
    def uncached_tokens(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return max(self.input_tokens - self.cache_read_tokens - self.cache_write_tokens, 0)


def add_usage(total: dict[str, Any], more: dict[str, Any] | None) -> dict[str, Any]:
    """`total` plus `more`, field by field: numbers add up (nested objects too), anything else takes the newer
    value. Used to report one turn's usage over several upstream calls."""
    if not more:
        return total
    for key, value in more.items():
        old = total.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float | dict):
            if value is not None or key not in total:
                total[key] = value
        elif isinstance(value, dict):
            total[key] = add_usage(dict(old) if isinstance(old, dict) else {}, value)
        else:
            total[key] = (old if isinstance(old, int | float) and not isinstance(old, bool) else 0) + value
    return total


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def openai_figures(usage: dict[str, Any], *, input_key: str, output_key: str) -> UsageFigures:
    """The figures of an OpenAI usage object (Chat: prompt_tokens/completion_tokens, Responses: input_tokens/
    output_tokens); the cached prompt tokens stand in `<input_key>_details.cached_tokens` in both."""
    details = usage.get(f"{input_key}_details") or {}
    return UsageFigures(
        input_tokens=as_int(usage.get(input_key)),
        output_tokens=as_int(usage.get(output_key)),
        cache_read_tokens=as_int(details.get("cached_tokens")) if isinstance(details, dict) else 0,
    )


def cache_counted_figures(
    usage: dict[str, Any], *, input_key: str, output_key: str, read_key: str, write_key: str
) -> UsageFigures:
    """The figures of a usage object whose input count leaves out the tokens read from and written to the prompt
    cache, which stand in counters of their own (Anthropic: input_tokens, cache_read_input_tokens,
    cache_creation_input_tokens; Converse: inputTokens, cacheReadInputTokens, cacheWriteInputTokens)."""
    read = as_int(usage.get(read_key))
    write = as_int(usage.get(write_key))
    return UsageFigures(
        input_tokens=as_int(usage.get(input_key)) + read + write,
        output_tokens=as_int(usage.get(output_key)),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def usage_of(response: dict[str, Any], key: str = "usage") -> dict[str, Any]:
    """A copy of a JSON answer's usage object under `key` ({} when it has none): each dialect's `usage_of` names its
    key (Gemini's is `usageMetadata`)."""
    usage = response.get(key)
    return dict(usage) if isinstance(usage, dict) else {}
