"""A LoRA adapter from `finetune` (peft, on the transformers model) for llama.cpp: merged into the weights,
or in llama.cpp's adapter format.

Merged (`merged_for`, used for small models): the 16-bit copy of the base with B·A·alpha/r added to each
adapted matrix, and the same in 8 bits, so the fine-tuned model reads prompts and writes replies as fast
as the base (an adapter applied at run time costs about a quarter of the
decode speed on a CPU). As an adapter file (`lora_for`, for models too big to copy):

peft stores, for each adapted projection of layer N, A (rank x in) and B (out x rank) under transformers'
names; llama.cpp reads the same matrices as `blk.N.attn_q.weight.lora_a` / `.lora_b` in a GGUF file of
type "adapter". One wrinkle: llama.cpp's GGUF files keep the query and key projections with their rows
interleaved for its rotary embedding (llama's architecture; not Gemma's or Qwen's), so B's rows for those two
are permuted the same way (transformers undoes that permutation when it reads a GGUF, which is the order the
adapter was trained in).

The converted file is written once into the cache, named by a hash of the adapter's files and the base
file, and reused while neither changes. Every `finetune` run makes a new adapter, and a merge of the
bundled model is 400 MB, so the folder keeps the most recently used files within CACHE_BYTES.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from pathlib import Path

from ....errors import EngineError
from ....i18n import N_, _
from .runtime import file_stamp, made_once, quantize

log = logging.getLogger(__name__)
FORMAT = 1  # bump when the written file changes, so old conversions are not reused
CACHE_BYTES = 3 << 30  # converted and merged adapters kept (least recently used out): three merges of a 500M model
# the architectures whose q/k rows llama.cpp's converter interleaves, and transformers puts back as it reads
# the GGUF (its TENSOR_PROCESSORS): Gemma 3 and Qwen are written as they are, so their B stays as trained
ROTARY_INTERLEAVED = frozenset({"llama"})
DAMAGED = N_("The adapter file {adapter} is damaged or not a llama.cpp LoRA adapter ({why}): restore it "
             "(`git checkout -- {adapter}`) or train it again.")
PROJECTIONS = {  # transformers' module name -> llama.cpp's tensor name
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _permute_rows(b, heads: int):
    """The rotary interleave llama.cpp's converter applies to q/k rows, applied to B's rows."""
    out, rank = b.shape
    return b.reshape(heads, 2, out // heads // 2, rank).swapaxes(1, 2).reshape(out, rank)


def is_gguf_adapter(adapter: Path) -> bool:
    """A llama.cpp adapter file (what the project ships), not a peft folder."""
    return adapter.suffix.lower() == ".gguf"


def _adapter_files(adapter: Path) -> list[Path]:
    if is_gguf_adapter(adapter):
        return [adapter]
    return [adapter / name for name in ("adapter_config.json", "adapter_model.safetensors")]


def _key(adapter: Path, base: Path) -> str:
    h = hashlib.sha256(f"{FORMAT}|{file_stamp(base)}".encode())
    for path in _adapter_files(adapter):
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def _cached(kind: str, adapter: Path, base: Path, cache: Path | None, make) -> Path:
    """`make(path)` once into the cache, named by the adapter's and the base's identity; a half-written file
    never stays behind."""
    if cache is None:
        from ....config import Settings

        cache = Settings.from_env().cache_dir / "lora-gguf"
    for path in _adapter_files(adapter):
        if not path.is_file():
            if is_gguf_adapter(adapter):
                raise EngineError(_("The adapter file {adapter} is missing.", adapter=adapter))
            raise EngineError(_("The adapter in {adapter} has no {name} (only safetensors adapters from peft are read).",
                                adapter=adapter, name=path.name))
    out = cache / f"{adapter.stem if is_gguf_adapter(adapter) else adapter.name}-{kind}-{_key(adapter, base)}.gguf"
    if out.is_file():
        out.touch()  # used now: the last to go when the folder is pruned
        return out
    try:
        made_once(out, make)
    except OSError as exc:
        raise EngineError(_("Could not write the adapter in {adapter} converted for llama.cpp into {cache} ({why}).",
                            adapter=adapter, cache=cache,
                            why=type(exc).__name__ + ": " + str(exc.strerror or exc))) from None
    log.info("converted the adapter %s for llama.cpp: %s", adapter, out)
    prune(cache, CACHE_BYTES)
    return out


def prune(folder: Path, capacity: int, keep_newest: int = 2) -> list[Path]:
    """Delete the least recently used .gguf files in `folder` until the rest fit in `capacity` bytes; the
    `keep_newest` most recent always stay (the model being loaded: a merge is two files). Returns what went."""
    files = sorted(folder.glob("*.gguf"), key=lambda p: p.stat().st_mtime, reverse=True)
    total, gone = sum(p.stat().st_size for p in files), []
    for old in files[keep_newest:][::-1]:
        if total <= capacity:
            break
        try:
            size = old.stat().st_size
            old.unlink()
        except OSError as exc:  # in use elsewhere, or read-only: kept
            log.info("could not prune %s (%r)", old, exc)
            continue
        total -= size
        gone.append(old)
        log.info("pruned %s from the adapter cache", old.name)
    return gone


def lora_for(adapter: Path, base: Path, cache: Path | None = None) -> Path:
    """The adapter converted for llama.cpp (made once, then read from the cache); a sentence naming the
    adapter when it is damaged or was trained for another base model."""
    if is_gguf_adapter(adapter):
        from gguf import GGUFReader

        _checked_pairs(adapter, base, GGUFReader(str(base)))  # a sentence when it is damaged or for another base
        return adapter
    return _cached("lora", adapter, base, cache, lambda path: convert(adapter, base, path))


def merged_for(adapter: Path, base: Path, f16: Path, cache: Path | None = None) -> tuple[Path, Path]:
    """(the merged model in 16 bits, the same in 8 bits): made once, then reused. `f16` is the base's
    16-bit copy, whose weights the adapter is added to. 8 bits and not the base's own 4: re-quantised to
    Q4_1, most of a fine-tuning's small changes fall back onto the old 4-bit grid (measured: the merged
    model then moves with the adapter at correlation 0.44, against 0.98 in 16 bits, and 8 bits keeps it
    (tests/test_local_llamacpp.py)), and Q8_0
    writes replies as fast as Q4_1 on a CPU (bench/RESULTS.md)."""
    from .llama_cpu import llama

    llama_cpp = llama()

    wide = _cached("merged-f16", adapter, base, cache, lambda path: merge(adapter, f16, path))
    narrow = _cached("merged-q8_0", adapter, base, cache,
                     lambda path: quantize(wide, path, llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0))
    return wide, narrow


def _read_adapter(adapter: Path):
    """(alpha as llama.cpp scales it, {llama.cpp tensor name: {"lora_A"|"lora_B": array}})."""
    import numpy as np
    from safetensors.numpy import load_file

    try:
        config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
        rank, alpha = int(config["r"]), float(config["lora_alpha"])
        weights = load_file(str(adapter / "adapter_model.safetensors"))
    except Exception as exc:
        raise EngineError(_("The adapter in {adapter} cannot be read ({why}).", adapter=adapter,
                            why=type(exc).__name__)) from None
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise EngineError(_("The adapter in {adapter} uses a rank per layer, which llama.cpp does not read.",
                            adapter=adapter))
    if config.get("use_rslora"):
        alpha *= math.sqrt(rank)  # llama.cpp scales by alpha/rank; rsLoRA by alpha/sqrt(rank)
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for name, tensor in weights.items():
        parts = name.split(".")
        if "layers" not in parts or parts[-2] not in ("lora_A", "lora_B"):
            raise EngineError(_("The adapter in {adapter} holds {name}, which llama.cpp cannot apply (only LoRA on "
                                "the layers' linear projections is converted).", adapter=adapter, name=name))
        layer = int(parts[parts.index("layers") + 1])
        module = ".".join(parts[parts.index("layers") + 2:-2])
        if module not in PROJECTIONS:
            raise EngineError(_("The adapter in {adapter} adapts {module}, which llama.cpp cannot apply.", adapter=adapter,
                                module=module))
        target = f"blk.{layer}.{PROJECTIONS[module]}.weight"
        pairs.setdefault(target, {})[parts[-2]] = tensor.astype(np.float32)
    return rank, alpha, pairs


def _read_gguf_adapter(adapter: Path):
    """(rank, alpha, {llama.cpp tensor name: {"lora_A"|"lora_B": array}}) of a llama.cpp adapter file, whose B rows
    are already in llama.cpp's order; a sentence naming the file when it is not one."""
    import numpy as np
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(adapter))
        kind = reader.fields["general.type"].contents()
        alpha = float(reader.fields["adapter.lora.alpha"].contents())
        pairs: dict[str, dict[str, np.ndarray]] = {}
        for tensor in reader.tensors:
            target, _dot, part = tensor.name.rpartition(".")
            if part not in ("lora_a", "lora_b"):
                raise ValueError(tensor.name)
            pairs.setdefault(target, {})["lora_A" if part == "lora_a" else "lora_B"] = \
                _as_float(tensor).reshape([int(x) for x in reversed(tensor.shape)])
    except Exception as exc:
        raise EngineError(_(DAMAGED, adapter=adapter,
                            why=type(exc).__name__)) from None
    if kind != "adapter" or not pairs:
        raise EngineError(_(DAMAGED, adapter=adapter,
                            why="general.type " + str(kind)))
    rank = int(next(iter(pairs.values()))["lora_A"].shape[0])
    return rank, alpha, pairs


def _as_float(tensor):
    """A tensor of an adapter file as float32, whether written in f32, f16 or q8_0."""
    import numpy as np
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    if tensor.tensor_type in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return np.asarray(tensor.data, dtype=np.float32)
    return dequantize(tensor.data, tensor.tensor_type).astype(np.float32)


def _checked_pairs(adapter: Path, base: Path, reader):
    """Each adapted matrix's (A, B) with B's rows in llama.cpp's order; a sentence when they do not fit."""
    gguf_file = is_gguf_adapter(adapter)
    import numpy as np

    rank, alpha, pairs = _read_gguf_adapter(adapter) if gguf_file else _read_adapter(adapter)
    arch = str(reader.fields["general.architecture"].contents())
    heads = int(reader.fields[f"{arch}.attention.head_count"].contents())
    kv_field = reader.fields.get(f"{arch}.attention.head_count_kv") or reader.fields[f"{arch}.attention.head_count"]
    kv_heads = int(kv_field.contents())
    shapes = {t.name: [int(x) for x in t.shape] for t in reader.tensors}  # [in, out]
    checked = {}
    for target, pair in sorted(pairs.items()):
        a, b = pair.get("lora_A"), pair.get("lora_B")
        want = shapes.get(target)
        if a is None or b is None or want is None or a.shape[1] != want[0] or b.shape[0] != want[1] \
                or a.shape[0] != b.shape[1]:
            raise EngineError(_("The adapter in {adapter} was trained for another base model than {base} ({target} "
                                "does not fit).", adapter=adapter, base=base.name, target=target))
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise EngineError(_(DAMAGED, adapter=adapter,
                                why=target + " is not finite"))
        if gguf_file:
            pass  # written in llama.cpp's order already
        elif arch in ROTARY_INTERLEAVED and target.endswith("attn_q.weight"):
            b = _permute_rows(b, heads)
        elif arch in ROTARY_INTERLEAVED and target.endswith("attn_k.weight"):
            b = _permute_rows(b, kv_heads)
        checked[target] = (a, b)
    return arch, rank, alpha, checked


def merge(adapter: Path, f16: Path, out: Path) -> None:
    """Write `f16` (a 16-bit GGUF model) with the adapter added into its weights."""
    import numpy as np
    from gguf import GGUFReader, GGUFValueType, GGUFWriter

    reader = GGUFReader(str(f16))
    arch, rank, alpha, pairs = _checked_pairs(adapter, f16, reader)
    writer = GGUFWriter(str(out), arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), kind, sub_type=sub)
    for tensor in reader.tensors:
        data = np.asarray(tensor.data)
        if tensor.name in pairs:
            a, b = pairs[tensor.name]
            data = (data.astype(np.float32) + (alpha / rank) * (b @ a)).astype(data.dtype)
        writer.add_tensor(tensor.name, np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


OUT_TYPES = ("f32", "f16", "q8_0")


def convert(adapter: Path, base: Path, out: Path, out_type: str = "f32") -> None:
    """Write the llama.cpp adapter file for `adapter` (peft LoRA) on the GGUF model `base`, its matrices in f32,
    f16 (half the size: what the project ships) or q8_0 (a quarter)."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter
    from gguf.quants import quantize as to_q8

    arch, _rank, alpha, pairs = _checked_pairs(adapter, base, GGUFReader(str(base)))
    writer = GGUFWriter(str(out), arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", alpha)

    def add(name: str, matrix) -> None:
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if out_type == "f16":
            writer.add_tensor(name, matrix.astype(np.float16))
        elif out_type == "q8_0" and matrix.shape[-1] % 32 == 0:  # q8_0 packs rows in blocks of 32
            writer.add_tensor(name, to_q8(matrix, GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, matrix)

    for target, (a, b) in pairs.items():
        add(f"{target}.lora_a", a)
        add(f"{target}.lora_b", b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
