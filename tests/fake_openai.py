"""The old name of support/fake_openai.py, kept because bench/ imports it and runs it as a script
(bench/load.py: `python tests/fake_openai.py DELAY_S`). Tests import support.fake_openai (tests/unit/test_house.py
holds them to it); this goes once bench/ does too."""

import runpy

if __name__ == "__main__":  # tests/ is this script's folder, so support is found beside it
    runpy.run_module("support.fake_openai", run_name="__main__", alter_sys=True)
else:
    from support.fake_openai import *  # noqa: F403
    from support.fake_openai import GOOD_KEY, FakeOpenAI  # noqa: F401  (what bench/ takes)
