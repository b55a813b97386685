"""`python -m cody_lsp`: a Ctrl+C while the modules load ends it with 130, also when Python wraps
the KeyboardInterrupt (a class body's `__set_name__` raises it as a RuntimeError's cause)."""

from __future__ import annotations

from cody_lsp.__main__ import _interrupted


def test_a_wrapped_keyboard_interrupt_counts_as_one() -> None:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__") from exc
    except RuntimeError as wrapped:
        assert _interrupted(wrapped)
    assert not _interrupted(ValueError("a real error"))
