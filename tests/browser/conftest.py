"""The browser lane's fixture: one Chromium per test module, as each module had when it imported test_browser's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.browser import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, launched once for the module's tests."""
    with chromium() as b:
        yield b
