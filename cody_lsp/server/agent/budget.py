"""How big a model request is, and how big it may be — without a tokenizer.

No tokenizer can be downloaded at run time, so a request's size is estimated from its
characters (the JSON of its messages and tools, four characters a token) and calibrated
with what the provider reported: the ratio of the `prompt_tokens` it counted for the
session's previous request to that request's character estimate scales the next
estimate. The budget of a request is the model's context window less the room kept for
the answer (known models below; `CODY_CONTEXT_WINDOW` and `CODY_OUTPUT_RESERVE` override).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ...config import ContextSettings
from ...protocol.wire import Usage
from .model import ModelError

CHARS_PER_TOKEN = 4
# A calibration ratio outside this range says more about an odd report than about text.
MIN_RATIO, MAX_RATIO = 0.25, 4.0

# An image in a request, as the models count it, about (OpenAI's detailed tiles, Anthropic's pixels/750).
IMAGE_TOKENS = 1_600
_IMAGE_URL = '"url": "data:image/'

DEFAULT_WINDOW = 32_768
DEFAULT_RESERVE = 4_096
# Model name prefix → (context window, output reserve), in tokens. The name is matched
# without a provider prefix ("openai/gpt-4o" is "gpt-4o"), case-insensitively; the
# longest matching prefix wins. protocol.md lists these ("Context budget").
KNOWN_MODELS: dict[str, tuple[int, int]] = {
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-4o": (128_000, 16_384),
    "gpt-4-turbo": (128_000, 4_096),
    "gpt-5": (400_000, 128_000),
    "o1": (200_000, 100_000),
    "o3": (200_000, 100_000),
    "o4-mini": (200_000, 100_000),
    "claude": (200_000, 16_384),
    "gemini": (1_048_576, 65_536),
    "deepseek-chat": (128_000, 8_192),
    "deepseek-reasoner": (128_000, 32_768),
    "qwen-max": (32_768, 8_192),
    "qwen-plus": (131_072, 16_384),
    "qwen-turbo": (1_000_000, 16_384),
    "qwen2.5": (32_768, 8_192),
    "llama3.1": (131_072, 8_192),
    "llama-3.1": (131_072, 8_192),
    "llama3.3": (131_072, 8_192),
    "llama-3.3": (131_072, 8_192),
    "mistral-large": (131_072, 8_192),
    "codestral": (256_000, 8_192),
}


@dataclass(frozen=True, slots=True)
class TokenBudget:
    window: int  # tokens the model reads and writes in one request
    reserve: int  # of those, kept free for the answer

    @property
    def limit(self) -> int:
        """The most a request may be (tokens)."""
        return max(self.window - self.reserve, 1)


def known_model(model: str) -> tuple[int, int] | None:
    name = model.rsplit("/", 1)[-1].lower()
    matches = [prefix for prefix in KNOWN_MODELS if name.startswith(prefix)]
    return KNOWN_MODELS[max(matches, key=len)] if matches else None


def budget_for(model: str, settings: ContextSettings) -> TokenBudget:
    """The model's budget: the environment's window and reserve, else the table's, else the defaults."""
    window, reserve = known_model(model) or (DEFAULT_WINDOW, DEFAULT_RESERVE)
    window = settings.window or window
    reserve = settings.output_reserve or min(reserve, window // 4)
    return TokenBudget(window, min(reserve, window - 1))


@dataclass(frozen=True, slots=True)
class Calibration:
    """A request of the session: the prompt tokens the provider counted, and our character estimate of it."""

    reported: int
    raw: int

    @property
    def ratio(self) -> float:
        return min(max(self.reported / max(self.raw, 1), MIN_RATIO), MAX_RATIO)


def raw_tokens(*parts: Any) -> int:
    """Characters of the JSON of `parts` (messages, tools), four to a token."""
    return json_tokens(*(json.dumps(part) for part in parts))


def json_tokens(*encoded: str) -> int:
    """`raw_tokens` of parts already serialized (`json.dumps`): an image (a data URL) counts
    IMAGE_TOKENS, whatever the length of its data."""
    chars, images = 0, 0
    for text in encoded:
        chars += len(text)
        start = text.find(_IMAGE_URL)
        while start != -1:
            begin = start + len(_IMAGE_URL)
            end = text.find('"', begin)
            end = len(text) if end == -1 else end
            chars -= end - begin
            images += 1
            start = text.find(_IMAGE_URL, end)
    return math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS


def calibrated(raw: int, calibration: Calibration | None) -> int:
    """A character estimate scaled by what the provider counted for the session's last request."""
    return raw if calibration is None else math.ceil(raw * calibration.ratio)


def estimate_output(text: str, tool_arguments: list[str]) -> int:
    """Tokens of a response the provider did not count."""
    chars = len(text) + sum(len(a) for a in tool_arguments)
    return math.ceil(chars / CHARS_PER_TOKEN)


def usage_of(reported: Usage, context_tokens: int, output_tokens: int) -> tuple[Usage, bool]:
    """The provider's usage of a step, or (when it sent none) an estimate; and whether it is one."""
    if reported.input_tokens or reported.output_tokens:
        return reported, False
    return Usage(context_tokens, output_tokens, context_tokens + output_tokens), True


_OVERFLOW = re.compile(
    r"context.{0,20}(length|window|limit)|maximum.{0,20}context|too many tokens|prompt is too long"
    r"|(reduce|shorten).{0,40}(prompt|messages|input)|input.{0,20}too long",
    re.IGNORECASE,
)


def is_context_overflow(exc: ModelError) -> bool:
    """The provider refused the request because it does not fit the model's context."""
    if "context_length" in exc.code:
        return True
    return exc.code in ("http_400", "http_413", "invalid_request_error", "stream_error") and bool(
        _OVERFLOW.search(exc.message)
    )
