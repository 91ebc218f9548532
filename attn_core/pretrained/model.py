"""A Llama-style decoder whose attention layers are attn_core modules, so a trained model runs through our core.

Embeddings, RMSNorms and the SwiGLU MLP are the small rest of the decoder, written as HF transformers' Llama computes
them (same parameter names, so its state dict loads as it is).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..accounting import as_dtype, kv_cache_bytes
from ..build import build_attention
from ..cache import GroupedKVCache, LatentKVCache
from ..config import AttentionConfig
from ..latent import RMSNorm
from ..packed import PackedRows, linear
from .checkpoint import DecoderConfig
from .tokenizer import ModelTokenizer


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, ffn_dim: int, *, device: torch.device | str | None = None):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, ffn_dim, bias=False, device=device)
        self.up_proj = nn.Linear(d_model, ffn_dim, bias=False, device=device)
        self.down_proj = nn.Linear(ffn_dim, d_model, bias=False, device=device)
        self._packed = PackedRows()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self._packed(self.gate_proj.weight, self.up_proj.weight)  # one product for both, when side by side
        if packed is None:
            gate, up = self.gate_proj(x), self.up_proj(x)
        else:
            gate, up = linear(x, packed).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate).mul_(up))  # in place: silu's output is a new tensor


class DecoderLayer(nn.Module):
    def __init__(self, config: DecoderConfig, attention: AttentionConfig, *, device: torch.device | str | None = None):
        super().__init__()
        self.input_layernorm = RMSNorm(config.d_model, config.norm_eps, device=device)
        self.self_attn = build_attention(attention, device=device)
        self.post_attention_layernorm = RMSNorm(config.d_model, config.norm_eps, device=device)
        self.mlp = SwiGLU(config.d_model, config.ffn_dim, device=device)

    def forward(
        self, x: torch.Tensor, cache: GroupedKVCache | LatentKVCache | None, return_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        attended, weights = self.self_attn(self.input_layernorm(x), cache=cache, return_weights=return_weights)
        # the residual adds in place, into the sublayers' own new outputs (their backward does not need them)
        x = attended.add_(x)
        return self.mlp(self.post_attention_layernorm(x)).add_(x), weights


@dataclass
class ModelCache:
    """One attn_core cache per layer."""

    layers: list[GroupedKVCache | LatentKVCache]

    @property
    def seq_len(self) -> int:
        return self.layers[0].seq_len

    @property
    def nbytes(self) -> int:
        """Bytes held by every layer's cache tensors."""
        return sum(layer.nbytes for layer in self.layers)


class PretrainedLM(nn.Module):
    """A causal language model: token ids [B, L] -> logits [B, L, vocab]; every attention layer an attn_core module
    (`lm.layers[i].self_attn`) with its own real cache."""

    def __init__(
        self,
        config: DecoderConfig,
        attention: AttentionConfig,
        tokenizer: ModelTokenizer,
        *,
        device: torch.device | str | None = None,
    ):
        super().__init__()
        self.config = config
        self.attention = attention
        self.tokenizer = tokenizer
        # Initialised only off the meta device (a model about to be loaded): nn.Embedding's normal_ on meta tensors
        # imports torch._dynamo, most of a load's time.
        embedding = torch.empty(config.vocab_size, config.d_model, device=device)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model, _weight=embedding)
        if not embedding.is_meta:
            nn.init.normal_(self.embed_tokens.weight)  # nn.Embedding's own initialisation
        self.layers = nn.ModuleList(DecoderLayer(config, attention, device=device) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps, device=device)
        if not config.tie_embeddings:
            self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False, device=device)

    # --- text ---------------------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids: list[int], skip_special: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special)

    def token_strings(self, ids: list[int]) -> list[str]:
        return self.tokenizer.token_strings(ids)

    def chat_ids(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> list[int]:
        return self.tokenizer.chat_ids(messages, add_generation_prompt)

    @property
    def decoder_layers(self) -> list[DecoderLayer]:
        """The layers, typed (nn.ModuleList's items are plain Modules to a type checker)."""
        return [layer for layer in self.layers if isinstance(layer, DecoderLayer)]

    # --- forward ------------------------------------------------------------------------------------------------
    def new_cache(self, batch_size: int = 1) -> ModelCache:
        return ModelCache([layer.self_attn.new_cache(batch_size) for layer in self.decoder_layers])

    def hidden_states(
        self, ids: torch.Tensor, cache: ModelCache | None = None, return_attention: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """ids [B, L] -> the final normalised hidden states [B, L, d_model], and each layer's weights [B, H, L, S]."""
        start = cache.seq_len if cache is not None else 0
        if start + ids.shape[1] > self.config.context_length:
            raise ValueError(
                f"{start + ids.shape[1]} tokens exceed the model's context of {self.config.context_length}: "
                "use a shorter text or a new cache."
            )
        x = self.embed_tokens(ids)
        maps: list[torch.Tensor] = []
        for index, layer in enumerate(self.layers):
            x, weights = layer(x, cache.layers[index] if cache is not None else None, return_attention)
            if weights is not None:
                maps.append(weights)
        return self.norm(x), maps if return_attention else None

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        weight = self.embed_tokens.weight if self.config.tie_embeddings else self.lm_head.weight
        return linear(hidden, weight)

    def forward(
        self, ids: torch.Tensor, cache: ModelCache | None = None, return_attention: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """ids [B, L] -> logits [B, L, vocab], and n_layers x [B, H, L, S] attention weights if asked for."""
        hidden, maps = self.hidden_states(ids, cache, return_attention)
        return self.logits(hidden), maps

    # --- generation ---------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def generate_steps(
        self,
        ids: list[int],
        max_new_tokens: int,
        cache: ModelCache | None = None,
        *,
        temperature: float = 0.0,
        top_k: int | None = None,
        seed: int = 0,
        stop_at_eos: bool = True,
    ) -> Iterator[int]:
        """Yield new token ids one at a time; when one is yielded, the cache holds every token before it. Greedy at
        temperature 0; otherwise sampled from a generator seeded with `seed`, so a run repeats exactly. Stops after
        the end-of-sequence token unless stop_at_eos is False (a fixed count, as a benchmark needs)."""
        if not ids:
            raise ValueError("generation needs at least one prompt token.")
        cache = self.new_cache() if cache is None else cache
        room = self.config.context_length - cache.seq_len - len(ids)
        if room <= 0:
            raise ValueError(f"the prompt fills the model's context of {self.config.context_length} tokens.")
        generator = torch.Generator().manual_seed(seed) if temperature > 0 else None
        step_input = torch.tensor([ids])
        for _ in range(min(max_new_tokens, room)):
            hidden, _ = self.hidden_states(step_input, cache)
            logits = self.logits(hidden[0, -1])
            token = _choose(logits, temperature, top_k, generator)
            yield token
            if stop_at_eos and token == self.tokenizer.spec.eos_id:
                return
            step_input = torch.tensor([[token]])

    def generate(
        self, ids: list[int], max_new_tokens: int = 40, cache: ModelCache | None = None, **sampling: Any
    ) -> list[int]:
        """The new token ids (the prompt excluded). See generate_steps for the sampling options."""
        return list(self.generate_steps(ids, max_new_tokens, cache, **sampling))

    # --- quality ------------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def token_nll(self, ids: list[int], window: int = 1024) -> torch.Tensor:
        """Negative log-likelihood (nats) of tokens 1..N-1, each given the tokens before it within its window of
        `window` tokens (non-overlapping windows; the first token of each window is context only). [N - windows]."""
        window = min(window, self.config.context_length)
        losses = []
        for start in range(0, len(ids), window):
            chunk = torch.tensor([ids[start : start + window]])
            if chunk.shape[1] < 2:
                continue
            logits, _ = self(chunk)
            losses.append(F.cross_entropy(logits[0, :-1].float(), chunk[0, 1:], reduction="none"))
        if not losses:
            raise ValueError("perplexity needs at least two tokens.")
        return torch.cat(losses)

    def perplexity(self, text: str, window: int = 1024) -> float:
        """exp(mean NLL) of the text's tokens under the model."""
        return math.exp(self.token_nll(self.encode(text), window).mean().item())

    # --- sizes --------------------------------------------------------------------------------------------------
    def kv_cache_bytes_per_token(self, dtype: torch.dtype | str = torch.float32) -> int:
        """Bytes one token leaves in one layer's cache (the formula; times n_layers for the model): 2·g·d_h
        elements for grouped-query layers, d_c + d_h^R for MLA."""
        return kv_cache_bytes(self.attention, batch=1, seq_len=1, dtype=as_dtype(dtype))

    def cache_nbytes(self, tokens: int, batch: int = 1, dtype: torch.dtype | str = torch.float32) -> int:
        """Bytes the whole model's cache holds after `tokens` tokens (every layer holds every token)."""
        return kv_cache_bytes(self.attention, batch, tokens, as_dtype(dtype)) * self.config.n_layers

    def with_layers_of(self, attention: AttentionConfig) -> PretrainedLM:
        """A model of the same decoder whose attention layers are of shape `attention` (weights on the meta device,
        to be loaded): embeddings, norms and MLPs are shared with this one, not copied."""
        n_kv = attention.n_kv_heads if attention.variant != "mla" else attention.n_heads
        other = PretrainedLM(replace(self.config, n_kv_heads=n_kv), attention, self.tokenizer, device="meta")
        other.embed_tokens = self.embed_tokens
        other.norm = self.norm
        for mine, theirs in zip(self.layers, other.layers, strict=True):
            theirs.input_layernorm = mine.input_layernorm
            theirs.post_attention_layernorm = mine.post_attention_layernorm
            theirs.mlp = mine.mlp
        if not self.config.tie_embeddings:
            other.lm_head = self.lm_head
        return other


def _choose(logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator | None) -> int:
    if temperature <= 0:
        return int(logits.argmax())
    scaled = logits.float() / temperature
    if top_k is not None:
        kth = torch.topk(scaled, top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    return int(torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=generator))
