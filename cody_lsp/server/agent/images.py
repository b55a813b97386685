"""Which models are given images (stdlib only: the ACP face's early `initialize` answer says
whether prompts may carry images before anything heavy is imported)."""

from __future__ import annotations

# Models that take images, by name prefix (without a provider prefix, case-insensitive), and
# the exceptions among them; `CODY_MODEL_IMAGES` (the editor's cody.modelImages) decides instead.
IMAGE_MODELS = (
    "gpt-4o",
    "gpt-4.1",
    "gpt-4-turbo",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "claude",
    "gemini",
    "llava",
    "bakllava",
    "pixtral",
    "qwen-vl",
    "qwen2-vl",
    "qwen2.5-vl",
    "llama3.2-vision",
    "llama-3.2-90b-vision",
    "llama-3.2-11b-vision",
    "llama-4",
    "gemma3",
    "grok-2-vision",
    "minicpm-v",
)
NO_IMAGE_MODELS = ("o1-mini", "o1-preview", "o3-mini", "claude-2", "claude-instant")


def takes_images(model: str, mode: str) -> bool:
    """Whether the model is given images: `mode` on/off, else ("auto") by its name."""
    if mode != "auto":
        return mode == "on"
    name = model.rsplit("/", 1)[-1].lower()
    return name.startswith(IMAGE_MODELS) and not name.startswith(NO_IMAGE_MODELS)
