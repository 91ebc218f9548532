"""The trained model (or a grouped conversion of it) with sliding-window layers and attention sinks: the token axis.

    w = with_window(lm, window=128, sink_tokens=1)                            # every layer windowed (StreamingLLM)
    w = with_window(lm, window=128, global_layers=global_layers("gemma3", 30))   # Gemma 3: 5 windowed, 1 full
    w = with_window(lm, window=128, learned_sinks=True)                        # gpt-oss's per-head sink logit
    w.perplexity(text, window=2048), w.generate(ids, cache=w.new_cache()), w.cache_nbytes(tokens=8192)

A windowed layer is attn_core's GroupedQueryAttention with the window option (attn_core.options) over the source
layer's own weight tensors (no copy): a query at position p sees keys p - window + 1 .. p and the first sink_tokens
tokens, and its cache (WindowedKVCache) holds at most sink_tokens + window - 1 tokens. The other (global) layers are
the source's layers, as module objects of their own over the same tensors, so heal() can give the student its own
copies without touching the teacher. Embeddings, norms and MLPs are the source's.

What it costs: a windowed layer's cache stops growing at its window, so the saving depends on the context. The figure
to compare at a context is cache_nbytes(tokens) (the whole model, exact: what new_cache() holds after that many
tokens), or cache_nbytes(tokens) / tokens per token: at 512 tokens a window of 128 holds a quarter of a full layer, at
32k under 1 %. kv_cache_bytes_per_token() stays the source's: what one token costs a layer while it is held.

Composes with: conversions to grouped variants (MHA, fewer KV heads), healed or not; a source whose layers keep a
quantised cache (its global layers keep theirs, its windowed layers hold their window exactly: the core's quantised
cache is for full-attention layers). MLA is out of scope: the core's MultiHeadLatentAttention has no window option.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import replace

import torch
from torch import nn

from ..accounting import kv_cache_bytes
from ..grouped import GroupedQueryAttention
from ..options import SINK_POSITIONS, AttentionOptions, SinkPositions, held_tokens
from ..packed import PackedRows
from .model import PretrainedLM

# Which layers stay global (full attention) in the published patterns (HF's layer_types): Gemma 3 has five sliding
# layers per full one (layer i is full when (i + 1) % 6 == 0), gpt-oss alternates, sliding first.
PATTERNS = ("every", "gemma3", "gpt-oss")


def global_layers(pattern: str, n_layers: int) -> tuple[int, ...]:
    """The layers a published pattern keeps global: "every" (every layer windowed: none), "gemma3" (5:1), "gpt-oss"
    (1:1)."""
    if pattern == "every":
        return ()
    if pattern == "gemma3":
        return tuple(range(5, n_layers, 6))
    if pattern == "gpt-oss":
        return tuple(range(1, n_layers, 2))
    raise ValueError(f"pattern={pattern!r}: choose one of {', '.join(PATTERNS)}.")


class WindowedLM(PretrainedLM):
    """A PretrainedLM whose windowed layers attend within a window (see the module's docstring); made by
    with_window."""

    def __init__(
        self,
        source: PretrainedLM,
        options: AttentionOptions,
        global_layers: frozenset[int],
    ) -> None:
        super().__init__(source.config, source.attention, source.tokenizer, device="meta")
        self.window_options = options
        self.global_layers = tuple(sorted(global_layers))
        self.windowed_layers = tuple(i for i in range(source.config.n_layers) if i not in global_layers)
        # the source's figures for its own (global) layers; a bound method, not a submodule
        self._source_cache_nbytes = source.cache_nbytes
        self._source_bytes_per_token = source.kv_cache_bytes_per_token
        self.embed_tokens = source.embed_tokens
        self.norm = source.norm
        if not source.config.tie_embeddings:
            self.lm_head = source.lm_head
        for index, (mine, theirs) in enumerate(zip(self.decoder_layers, source.decoder_layers, strict=True)):
            mine.input_layernorm = theirs.input_layernorm
            mine.post_attention_layernorm = theirs.post_attention_layernorm
            mine.mlp = theirs.mlp
            if index in global_layers:
                mine.self_attn = _twin(theirs.self_attn)
            else:
                mine.self_attn = _windowed(theirs.self_attn, options)

    def kv_cache_bytes_per_token(self, dtype: torch.dtype | str = torch.float32) -> int:
        """The source's figure: bytes one token costs one layer while that layer holds it. A windowed layer holds
        at most window - 1 + sink_tokens tokens; the model's cache at a context is cache_nbytes(tokens)."""
        return self._source_bytes_per_token(dtype)

    def cache_nbytes(self, tokens: int, batch: int = 1, dtype: torch.dtype | str = torch.float32) -> int:
        """Bytes the whole model's cache holds after `tokens` tokens: each windowed layer its sinks and its
        window - 1 latest tokens (attn_core.options.held_tokens), each global layer what the source's layer holds."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"tokens={tokens!r}: a cache holds a whole number of tokens, 0 or more.")
        per_global = self._source_cache_nbytes(tokens, batch, dtype) // self.config.n_layers
        held = held_tokens(self.window_options, tokens)
        per_windowed = kv_cache_bytes(self.attention, batch, held, dtype)
        return len(self.global_layers) * per_global + len(self.windowed_layers) * per_windowed

    def cache_bytes_per_token(self, tokens: int, dtype: torch.dtype | str = torch.float32) -> float:
        """The whole model's cache per token at a context of `tokens` tokens: cache_nbytes(tokens) / tokens."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise ValueError(f"tokens={tokens!r}: a context of at least one token.")
        return self.cache_nbytes(tokens, 1, dtype) / tokens


def _twin(module: nn.Module) -> nn.Module:
    """module as an object of its own over the same tensors: replacing one of its parameters (as heal does, with a
    copy it trains) leaves module as it was."""
    twin = copy.copy(module)
    twin._parameters = dict(module._parameters)
    twin._buffers = dict(module._buffers)
    twin._modules = {name: _twin(child) for name, child in module._modules.items() if child is not None}
    for name, value in vars(module).items():
        if isinstance(value, PackedRows):  # its memo is the module's own
            setattr(twin, name, PackedRows())
    return twin


def _windowed(layer: nn.Module, options: AttentionOptions) -> GroupedQueryAttention:
    """A grouped layer with the window over layer's weight tensors (the same ones); a learned sink logit per head
    starts at 0, one more softmax entry as large as a score of 0."""
    assert isinstance(layer, GroupedQueryAttention)  # with_window checked
    # the source's own options (a scale, q/k norms...) with the window's
    options = replace(
        layer.options,
        window=options.window,
        sink_tokens=options.sink_tokens,
        sink_positions=options.sink_positions,
        learned_sinks=options.learned_sinks,
    )
    windowed = GroupedQueryAttention(layer.cfg, options=options, device="meta")
    state = dict(layer.state_dict())
    if options.learned_sinks:
        state["sinks"] = torch.zeros(layer.cfg.n_heads, dtype=layer.q_proj.weight.dtype)
    windowed.load_state_dict(state, assign=True, strict=True)
    return windowed


def with_window(
    lm: PretrainedLM,
    window: int | None,
    sink_tokens: int = 0,
    global_layers: Iterable[int] = (),
    *,
    learned_sinks: bool = False,
    sink_positions: SinkPositions = "original",
) -> WindowedLM:
    """lm with sliding-window attention in every layer but `global_layers` (see the module's docstring): each
    windowed query sees its last `window` tokens and the first `sink_tokens` (StreamingLLM's attention sinks); with
    learned_sinks, a learned sink logit per head as well (gpt-oss's, 0 until healed). Shares lm's weights.

    sink_positions: "original": the kept first tokens at their own positions, ever farther from the query;
    "cache": StreamingLLM's, just before the window for RoPE, as StreamingLLM numbers positions inside its cache
    (attn_core.options.AttentionOptions). On the lab's text in pieces of 2,048 the two differ by 0.2 % (window 128,
    one sink: 16.33 and 16.29), so the stored window table keeps "original"."""
    n_layers, context = lm.config.n_layers, lm.config.context_length
    if window is None:
        if sink_tokens:
            raise ValueError("sink_tokens keeps the first tokens beside a window: give window too.")
        raise ValueError("window: give the tokens each windowed layer sees (e.g. 128).")
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= context:
        raise ValueError(f"window={window!r}: a whole number of tokens from 1 to the model's context of {context}.")
    if isinstance(sink_tokens, bool) or not isinstance(sink_tokens, int) or not 0 <= sink_tokens < context:
        raise ValueError(f"sink_tokens={sink_tokens!r}: a whole number of first tokens kept, 0 or more.")
    kept = list(global_layers)
    if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_layers for i in kept):
        raise ValueError(f"global_layers={kept!r}: layer numbers from 0 to {n_layers - 1}.")
    if len(set(kept)) == n_layers:
        raise ValueError(f"global_layers={kept!r} names every layer: leave some layers to window.")
    if sink_positions not in SINK_POSITIONS:
        raise ValueError(f"sink_positions={sink_positions!r}: choose one of {', '.join(SINK_POSITIONS)}.")
    options = AttentionOptions(
        window=window, sink_tokens=sink_tokens, learned_sinks=learned_sinks, sink_positions=sink_positions
    )
    for index, layer in enumerate(lm.decoder_layers):
        attention = layer.self_attn
        if isinstance(attention, GroupedQueryAttention) and attention.options.windowed:
            raise ValueError("lm already has windowed layers: give with_window the model it was made from.")
        if index not in kept and not isinstance(attention, GroupedQueryAttention):
            raise ValueError(
                f"layer {index} is {type(attention).__name__}: only grouped layers (MHA, GQA, MQA) take a window "
                "(MLA has no window option in attn_core); keep it in global_layers."
            )
    return WindowedLM(lm, options, frozenset(kept)).eval().requires_grad_(False)
