"""The old name of support/loopback.py, kept because bench/ imports it (bench/common.py puts tests/ on its path).
Tests import support.loopback (tests/unit/test_house.py holds them to it); this goes once bench/ does too."""

from support.loopback import *  # noqa: F403
from support.loopback import LLAMA_PYTHON, ROOT, gradio_app, llama_server  # noqa: F401  (what bench/ takes)
