"""A LoRA adapter from `finetune` (peft, on the transformers model) in llama.cpp's adapter format.

peft stores, for each adapted projection of layer N, A (rank x in) and B (out x rank) under transformers'
names; llama.cpp reads the same matrices as `blk.N.attn_q.weight.lora_a` / `.lora_b` in a GGUF file of
type "adapter". One wrinkle: llama.cpp's GGUF files keep the query and key projections with their rows
interleaved for its rotary embedding, so B's rows for those two are permuted the same way (transformers
undoes that permutation when it reads a GGUF, which is the order the adapter was trained in).

The converted file is written once into the cache, named by a hash of the adapter's files and the base
file, and reused while neither changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path

from ...errors import EngineError

log = logging.getLogger(__name__)
FORMAT = 1  # bump when the written file changes, so old conversions are not reused
PROJECTIONS = {  # transformers' module name -> llama.cpp's tensor name
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _permute_rows(b, heads: int):
    """The rotary interleave llama.cpp's converter applies to q/k rows, applied to B's rows."""
    out, rank = b.shape
    return b.reshape(heads, 2, out // heads // 2, rank).swapaxes(1, 2).reshape(out, rank)


def _key(adapter: Path, base: Path) -> str:
    h = hashlib.sha256(f"{FORMAT}|{base.resolve()}|{base.stat().st_size}|{base.stat().st_mtime_ns}".encode())
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        h.update((adapter / name).read_bytes())
    return h.hexdigest()[:20]


def lora_for(adapter: Path, base: Path, cache: Path | None = None) -> Path:
    """The adapter converted for llama.cpp (made once, then read from the cache); a sentence naming the
    adapter when it is damaged or was trained for another base model."""
    if cache is None:
        from ...config import Settings

        cache = Settings.from_env().cache_dir / "lora-gguf"
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        if not (adapter / name).is_file():
            raise EngineError(f"The adapter in {adapter} has no {name} (only safetensors adapters from peft are read).")
    out = cache / f"{adapter.name}-{_key(adapter, base)}.gguf"
    if out.is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(f".{os.getpid()}.partial")
    try:
        convert(adapter, base, partial)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    log.info("converted the adapter %s for llama.cpp: %s", adapter, out)
    return out


def convert(adapter: Path, base: Path, out: Path) -> None:
    """Write the llama.cpp adapter file for `adapter` (peft LoRA) on the GGUF model `base`."""
    import numpy as np
    from gguf import GGUFReader, GGUFWriter
    from safetensors.numpy import load_file

    try:
        config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
        rank, alpha = int(config["r"]), float(config["lora_alpha"])
        weights = load_file(str(adapter / "adapter_model.safetensors"))
    except Exception as exc:
        raise EngineError(f"The adapter in {adapter} cannot be read ({type(exc).__name__}).") from None
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise EngineError(f"The adapter in {adapter} uses a rank per layer, which llama.cpp does not read.")
    if config.get("use_rslora"):
        alpha *= math.sqrt(rank)  # llama.cpp scales by alpha/rank; rsLoRA by alpha/sqrt(rank)
    reader = GGUFReader(str(base))
    arch = str(reader.fields["general.architecture"].contents())
    heads = int(reader.fields[f"{arch}.attention.head_count"].contents())
    kv_heads = int(reader.fields.get(f"{arch}.attention.head_count_kv", reader.fields[f"{arch}.attention.head_count"])
                   .contents())
    shapes = {t.name: [int(x) for x in t.shape] for t in reader.tensors}  # [in, out]
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for name, tensor in weights.items():
        parts = name.split(".")
        if "layers" not in parts or parts[-2] not in ("lora_A", "lora_B"):
            raise EngineError(f"The adapter in {adapter} holds {name}, which llama.cpp cannot apply "
                               "(only LoRA on the layers' linear projections is converted).")
        layer = int(parts[parts.index("layers") + 1])
        module = ".".join(parts[parts.index("layers") + 2:-2])
        if module not in PROJECTIONS:
            raise EngineError(f"The adapter in {adapter} adapts {module}, which llama.cpp cannot apply.")
        target = f"blk.{layer}.{PROJECTIONS[module]}.weight"
        pairs.setdefault(target, {})[parts[-2]] = tensor.astype(np.float32)
    writer = GGUFWriter(str(out), arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", alpha)
    for target, pair in sorted(pairs.items()):
        a, b = pair.get("lora_A"), pair.get("lora_B")
        want = shapes.get(target)
        if a is None or b is None or want is None or a.shape[1] != want[0] or b.shape[0] != want[1] \
                or a.shape[0] != b.shape[1]:
            raise EngineError(f"The adapter in {adapter} was trained for another base model than {base.name} "
                               f"({target} does not fit).")
        if target.endswith("attn_q.weight"):
            b = _permute_rows(b, heads)
        elif target.endswith("attn_k.weight"):
            b = _permute_rows(b, kv_heads)
        writer.add_tensor(f"{target}.lora_a", np.ascontiguousarray(a))
        writer.add_tensor(f"{target}.lora_b", np.ascontiguousarray(b))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
