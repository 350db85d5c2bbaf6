"""Lanes against a real model server: llama-cpp-python's own server answers one visitor at a time."""

from chatharuhi_core.chat.engines.server_slots import forget_servers, server_slots


def test_llama_cpp_python_serves_one_at_a_time(llama_server):
    forget_servers()
    assert server_slots(llama_server) == 1
