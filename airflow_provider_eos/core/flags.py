"""Boolean words as people and configs write them (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``).

One reading for every place that accepts a flag as text: librdkafka settings in a spec and
operator arguments that arrive as rendered templates.
"""

from __future__ import annotations

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def parse_flag(value: object) -> bool | None:
    """``value`` as a boolean, or ``None`` when it is not one of the boolean words (the caller names the fix)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None
