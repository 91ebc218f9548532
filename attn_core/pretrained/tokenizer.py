"""The model's own tokenizer, built from its GGUF metadata with HF `tokenizers`, and its chat template.

The GGUF pre-tokeniser "smollm" (llama.cpp's rule) splits every digit on its own before GPT-2's byte-level regex;
the vocabulary has no multi-digit token, so the model was trained that way. transformers' GGUF tokenizer skips that
step, and differs on whitespace runs before a digit ("\\n\\n  0"): this one follows the model.
"""

from __future__ import annotations

import unicodedata

from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from .checkpoint import TokenizerSpec

# Characters that would be invisible or break a label, shown as visible stand-ins.
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


class ModelTokenizer:
    def __init__(self, spec: TokenizerSpec):
        if spec.pre_tokenizer not in ("smollm", "gpt2"):
            raise ValueError(f"pre-tokeniser {spec.pre_tokenizer!r} is not supported (smollm and gpt2 are).")
        self.spec = spec
        vocab = {token: index for index, token in enumerate(spec.tokens)}
        merges = [(left, right) for left, right in (pair.split(" ", 1) for pair in spec.merges)]
        tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        if spec.pre_tokenizer == "smollm":
            tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), byte_level]
            )
        else:
            tokenizer.pre_tokenizer = byte_level
        tokenizer.decoder = decoders.ByteLevel()
        tokenizer.add_special_tokens(
            [AddedToken(spec.tokens[i], special=True, normalized=False) for i in spec.special_ids]
        )
        self._tokenizer = tokenizer
        self._byte_of_char = {char: byte for byte, char in _bytes_to_unicode().items()}
        self._special = frozenset(spec.special_ids)
        self._template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
            spec.chat_template
        )

    @property
    def vocab_size(self) -> int:
        return len(self.spec.tokens)

    def encode(self, text: str) -> list[int]:
        """Token ids of text; the model's control tokens written in the text (<|im_start|>, …) are read as such."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int], skip_special: bool = False) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=skip_special)

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes one token stands for (a control token: its name in UTF-8)."""
        token = self.spec.tokens[token_id]
        if token_id in self._special:
            return token.encode("utf-8")
        return bytes(self._byte_of_char[char] for char in token)

    def token_strings(self, ids: list[int]) -> list[str]:
        """One readable label per token. Whitespace shows as ␣ ↵ ⇥; a token that holds only part of a multi-byte
        character shows the character with the bytes it holds, e.g. '好[1-2/3]' and '好[3/3]'."""
        pieces = [self.token_bytes(i) for i in ids]
        stream = b"".join(pieces)
        owner = _character_spans(stream)  # byte offset -> (char, first byte offset, byte length)
        labels, offset = [], 0
        for token_id, piece in zip(ids, pieces, strict=True):
            if token_id in self._special:
                labels.append(piece.decode("utf-8"))
                offset += len(piece)
                continue
            parts, position, end = [], offset, offset + len(piece)
            while position < end:
                char, start, length = owner[position]
                inside_to = min(end, start + length)
                text = _visible(char)
                if start < offset or start + length > end:  # the character is split across tokens
                    first, last = position - start + 1, inside_to - start
                    held = f"{first}" if first == last else f"{first}-{last}"
                    text = f"{text}[{held}/{length}]"
                parts.append(text)
                position = inside_to
            labels.append("".join(parts))
            offset = end
        return labels

    def chat_text(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The conversation rendered by the model's own chat template."""
        return self._template.render(messages=messages, add_generation_prompt=add_generation_prompt)

    def chat_ids(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> list[int]:
        return self.encode(self.chat_text(messages, add_generation_prompt))


def _visible(char: str) -> str:
    if len(char) != 1:  # already an escape for a byte that is not UTF-8
        return char
    if char in _VISIBLE:
        return _VISIBLE[char]
    if unicodedata.category(char).startswith("C"):  # control, format, unassigned, surrogate (a lone bad byte)
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"U+{ord(char):04X}"
    return char


def _character_spans(stream: bytes) -> dict[int, tuple[str, int, int]]:
    """Map each byte offset to the character it belongs to. Invalid UTF-8 bytes become their own one-byte
    characters (shown as \\xNN), so every byte has an owner."""
    spans: dict[int, tuple[str, int, int]] = {}
    position = 0
    while position < len(stream):
        length = _utf8_length(stream[position])
        chunk = stream[position : position + length]
        try:
            char = chunk.decode("utf-8") if length > 1 or chunk[0] < 0x80 else ""
        except UnicodeDecodeError:
            char = ""
        if len(char) != 1:
            char, length = f"\\x{stream[position]:02x}", 1
        for index in range(position, position + length):
            spans[index] = (char, position, length)
        position += length
    return spans


def _utf8_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >> 5 == 0b110:
        return 2
    if lead >> 4 == 0b1110:
        return 3
    if lead >> 3 == 0b11110:
        return 4
    return 1  # a continuation byte without its lead, or an invalid byte


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: every byte as a printable character (the table byte-level BPE vocabularies use)."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, codes), strict=True))
