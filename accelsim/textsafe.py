"""Text that is safe to show on a terminal: control characters made visible, long text cut short."""

from __future__ import annotations

import re

# C0/C1 controls (newlines, ESC of ANSI sequences, DEL), line/paragraph separators and the
# bidirectional overrides/isolates that can reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, limit: int | None = None) -> str:
    """``text`` with control characters shown as escapes (``\\n``, ``\\x1b``), cut to ``limit`` characters."""
    s = text if isinstance(text, str) else str(text)
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 3, 0)] + "..."
    return _UNSAFE.sub(_escape, s)


def short_repr(value: object, limit: int = 60) -> str:
    """A repr of ``value`` of at most ``limit`` characters, built in bounded work (never a full repr of a
    large container, string or number), with control characters escaped."""
    text = _summary(value, limit, 0)
    return printable(text if len(text) <= limit else text[: max(limit - 3, 0)] + "...")


def _summary(value: object, limit: int, depth: int) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > 128:
            return f"<an integer of about {round(value.bit_length() * 0.30103)} digits>"
        return repr(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str | bytes):
        return repr(value[: limit + 1])
    if isinstance(value, list | tuple | dict):
        left, right = ("{", "}") if isinstance(value, dict) else ("[", "]") if isinstance(value, list) else ("(", ")")
        if depth >= 3:
            return f"{left}...{right}" if value else left + right
        parts: list[str] = []
        length = 0
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            if length > limit:
                parts.append("...")
                break
            if isinstance(value, dict):
                k, v = item
                text = f"{_summary(k, limit, depth + 1)}: {_summary(v, limit, depth + 1)}"
            else:
                text = _summary(item, limit, depth + 1)
            parts.append(text)
            length += len(text) + 2
        return left + ", ".join(parts) + right
    if type(value).__module__ == "datetime":
        return repr(value)
    return f"<{type(value).__name__}>"


def speedup_text(value: float, digits: int = 2) -> str:
    """A speedup as ``1.47x`` (``digits`` decimals), never reading as 1 when it is not: a ratio that rounds to 1 but is
    slower or faster gets at least three decimals (``0.998x``, ``1.004x``), up to six; past that it says on which
    side of 1 it lies (``<1.000000x``), so the text never contradicts a slower / faster classification."""
    text = f"{value:.{digits}f}"
    places = max(digits, 3)
    while float(text) == 1.0 and value != 1.0 and places <= 6:
        text = f"{value:.{places}f}"
        places += 1
    if float(text) == 1.0 and value != 1.0:
        text = ("<" if value < 1.0 else ">") + text
    return text + "x"
