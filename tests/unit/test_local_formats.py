"""What a base model without a chat template (Gemma 3 270M) is trained on and prompted with, and how an adapter's
matrices are laid out for llama.cpp per architecture (issue 54): no model is loaded, the files are made here."""

import json

import numpy as np
import pytest

from chatharuhi_core.chat.engines.local.gguf_lora import _checked_pairs, _permute_rows
from chatharuhi_core.chat.engines.local.runtime import PLAIN_TEMPLATE, plain_prompt

MESSAGES = [
    {"role": "system", "content": "You are Sun Wukong.\n\nStay in character."},
    {"role": "user", "content": "唐僧：「悟空，你在哪里？」"},
    {"role": "assistant", "content": "孙悟空：「俺在这儿呢！」"},
    {"role": "user", "content": "唐僧：「你是谁？」"},
]


def _render(messages, **kwargs) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _indices = render_jinja_template([messages], chat_template=PLAIN_TEMPLATE, bos_token="<bos>",
                                               eos_token="<eos>", **kwargs)
    return rendered[0]


def test_the_plain_template_trains_on_the_prompt_the_engine_writes():
    """finetune renders its rows with the template, the engine writes plain_prompt: they must read the same,
    blank lines and start-of-text token included, and a row's reply must follow its prompt."""
    prompt = _render(MESSAGES, add_generation_prompt=True)
    assert prompt == plain_prompt(MESSAGES, "<bos>")
    assert prompt.startswith("<bos>System: You are Sun Wukong.\n\nStay in character.\n\nUser: ")
    assert prompt.endswith("\n\nUser: 唐僧：「你是谁？」\n\nAssistant:")
    row = _render([*MESSAGES, {"role": "assistant", "content": "孙悟空：「俺老孙！」"}])
    assert row == prompt + " 孙悟空：「俺老孙！」<eos>"


def test_a_model_that_reads_no_start_token_gets_none():
    assert plain_prompt(MESSAGES[:2]) == ("System: You are Sun Wukong.\n\nStay in character.\n\n"
                                          "User: 唐僧：「悟空，你在哪里？」\n\nAssistant:")


def _tiny_gguf(path, arch: str, heads: int = 2, rows: int = 8, cols: int = 6) -> None:
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), arch)
    writer.add_uint32(f"{arch}.attention.head_count", heads)
    writer.add_uint32(f"{arch}.attention.head_count_kv", heads)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((rows, cols), dtype=np.float32))
    writer.add_tensor("blk.0.ffn_up.weight", np.zeros((rows, cols), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _tiny_adapter(folder, rows: int = 8, cols: int = 6, rank: int = 2) -> np.ndarray:
    from safetensors.numpy import save_file

    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 2 * rank}))
    b = np.arange(rows * rank, dtype=np.float32).reshape(rows, rank)
    prefix = "base_model.model.model.layers.0."
    save_file({f"{prefix}self_attn.q_proj.lora_A.weight": np.ones((rank, cols), dtype=np.float32),
               f"{prefix}self_attn.q_proj.lora_B.weight": b,
               f"{prefix}mlp.up_proj.lora_A.weight": np.ones((rank, cols), dtype=np.float32),
               f"{prefix}mlp.up_proj.lora_B.weight": b}, str(folder / "adapter_model.safetensors"))
    return b


@pytest.mark.parametrize("arch,interleaved", [("llama", True), ("gemma3", False), ("qwen2", False)])
def test_query_rows_are_interleaved_only_where_llama_cpps_converter_interleaved_them(tmp_path, arch, interleaved):
    """llama.cpp's converter permutes q/k rows for llama's rotary layout only, and transformers undoes it only
    there as it reads a GGUF; an adapter trained on a dequantised Gemma must reach llama.cpp as trained."""
    from gguf import GGUFReader

    base = tmp_path / "base.gguf"
    _tiny_gguf(base, arch)
    b = _tiny_adapter(tmp_path / "adapter")
    _arch, _rank, _alpha, pairs = _checked_pairs(tmp_path / "adapter", base, GGUFReader(str(base)))
    query = pairs["blk.0.attn_q.weight"][1]
    assert np.array_equal(query, _permute_rows(b, 2) if interleaved else b)
    assert np.array_equal(pairs["blk.0.ffn_up.weight"][1], b)  # never a projection without rotary
    assert not np.array_equal(_permute_rows(b, 2), b)  # the test can tell the two apart
