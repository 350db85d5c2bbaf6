"""With CHROMA_HOST set, the same store code talks to a Chroma server (`chroma run` on loopback)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.loopback import free_port, wait_http

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.config import Settings
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.roles.store import open_remote


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    exe = Path(sys.executable).with_name("chroma")
    cmd = [str(exe)] if exe.exists() else [shutil.which("chroma") or "chroma"]
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = open(data / "server.log", "w")
    proc = subprocess.Popen([*cmd, "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=60, proc=proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_store_on_a_chroma_server(chroma_server, tmp_path, embedder):
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path), "CHROMA_HOST": "127.0.0.1",
                                  "CHROMA_PORT": str(chroma_server)})
    role = load_role("sunwukong")
    store, rebuilt = open_remote(settings, role, embedder)
    assert rebuilt and store.where.startswith("http://127.0.0.1")
    assert "一万三千五百斤" in store.search("金箍棒多重", 1)[0].text
    _, rebuilt = open_remote(settings, role, embedder)
    assert not rebuilt  # the manifest matches: reused on the server too
    bot = ChatHaruhi(role_name="sunwukong", settings=settings)
    assert "一万三千五百斤" in bot.chat("你的金箍棒有多重？")
    assert not (tmp_path / "stores").exists()  # nothing written locally


def test_unreachable_server_is_a_sentence(tmp_path, embedder):
    from chatharuhi_core.errors import ChatHaruhiError

    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path), "CHROMA_HOST": "127.0.0.1",
                                  "CHROMA_PORT": str(free_port())})
    with pytest.raises(ChatHaruhiError, match="Could not use the Chroma server at 127.0.0.1"):
        open_remote(settings, load_role("sherlock"), embedder)
