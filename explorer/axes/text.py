"""The axes page's words, worked out from the probe's numbers in this run's language: layer kinds' names, what is
wrong with a pasted config, and the captions the curves say (where they stop growing, where two cross, what a
decoding step reads of what is held, which design cuts which axis most)."""

from __future__ import annotations

from explorer.i18n import N_, _, format_bytes, n_, percent, sentences, sig
from explorer.probes.axes import AxisCuts, ConfigProblem, Crossing, ModelCurves, Plateau, extremes, leaders

# The core's layer kinds (attn_core.hf readers' words) as the page names them; a kind not listed is shown as the
# core names it, in code type.
KIND_NAMES = {
    "full": N_("full attention"),
    "sliding": N_("sliding window"),
    "mla": "MLA",
    "dsa": "DSA",
    "sparse": N_("sparse attention"),
    "csa": "CSA",
    "hca": "HCA",
    "linear": N_("linear attention"),
    "gated_deltanet": N_("linear attention"),
    "kda": N_("linear attention"),
    "shared": N_("shared KV"),  # Gemma 3n's and Gemma 4's layers that read an earlier layer's cache
    "chunked": N_("chunked attention"),
    "nope": N_("full attention without RoPE"),
    "mamba": N_("Mamba-2 state"),
    "moe": N_("MoE, no cache"),
    "mlp": N_("MLP, no cache"),
}


def kind_name(kind: str) -> str:
    return _(KIND_NAMES[kind]) if kind in KIND_NAMES else f"`{kind}`"


def kind_label(kind: str) -> str:
    """A kind's name where Markdown is not drawn (tables, charts): without the code marks."""
    return kind_name(kind).strip("`")


def times(value: float | None) -> str:
    return "—" if value is None else f"{sig(value)}×"


# --- a pasted config -------------------------------------------------------------------------------------------------
def problem_text(problem: ConfigProblem) -> str:
    """What is wrong with a pasted config, in this run's language (the parser's or core's message goes beside it)."""
    values = problem.values
    if problem.kind == "empty":
        return _("Paste a `config.json` above, upload one, or start from a published model: its cache is drawn here.")
    if problem.kind == "too_long":
        return _(
            "This text has {chars} characters: a `config.json` has a few thousand, and at most {limit} are read. Nothing "
            "was read: paste the `config.json` file alone.",
            chars=values["chars"],
            limit=values["limit"],
        )
    if problem.kind == "not_json":
        return _(
            "This is not JSON: the reader stopped at line {line}, column {column}. Paste the `config.json` file as it "
            "is.",
            line=values["line"],
            column=values["column"],
        )
    if problem.kind == "not_object":
        return _(
            "This JSON is a single value ({found}), not an object: a `config.json` is one {{…}} of named fields.",
            found=str(values["found"]),
        )
    if problem.kind == "no_model_type":
        return _(
            "This config has no `model_type`: it names the design its layers are read as (`llama`, `gpt_oss`, "
            "`deepseek_v3`, …)."
        )
    if problem.kind == "unsupported":
        return _(
            "`model_type` “{model_type}” is not one the core reads yet: its message lists the ones it reads.",
            model_type=str(values["model_type"]),
        )
    if problem.kind == "core_failed":
        return _(
            "The core failed on this config instead of saying what is wrong with it (a value it should have refused, "
            "such as a width too large to build): check the numbers. Its error:"
        )
    if problem.kind == "field":
        return field_text(values)
    if problem.kind == "too_large":
        return too_large_text(values)
    return _("The core cannot read this config; its reason is below.")


# What a field needs (attn_core.Need's kind), said with the field and its value only
FIELD_NEEDS = {
    "given": N_("The field `{field}` is missing: this model needs it."),
    "bool": N_("The field `{field}` must be `true` or `false`; it is `{value}`."),
    "dict": N_("The field `{field}` must be an object ({{…}}); it is `{value}`."),
    "list": N_("The field `{field}` must be a list ([…]); it is `{value}`."),
    "number": N_("The field `{field}` must be a finite number above 0; it is `{value}`."),
}


def field_text(values: dict[str, object]) -> str:
    """A field the core refuses (attn_core.ConfigFieldError's values), in this run's language."""
    need, name, value = values["need"], values["field"], str(values["value"]).replace("`", "'")
    choices = _(", ").join(f"`{c}`" for c in values["choices"])  # type: ignore[attr-defined]
    low, high = values["minimum"], values["maximum"]
    if need == "number" and low == 0:
        return _("The field `{field}` must be a finite number, 0 or more; it is `{value}`.", field=name, value=value)
    if need == "list" and low is not None:
        return _(
            "The field `{field}` must list {n} entries, one per layer (`num_hidden_layers`), each one of {choices}.",
            field=name,
            n=low,
            choices=choices,
        )
    if need in FIELD_NEEDS:
        return _(FIELD_NEEDS[str(need)], field=name, value=value)
    if need == "whole":
        return _(
            "The field `{field}` must be a whole number from {minimum} to {maximum}; it is `{value}`.",
            field=name,
            minimum=low,
            maximum=high,
            value=value,
        )
    if need == "choice":
        return _(
            "The field `{field}` is `{value}`: the core reads {choices}.", field=name, value=value, choices=choices
        )
    if need == "divides":
        return _(
            "`{other}` ({other_value}) is not a multiple of `{field}` ({value}): the query heads are shared equally "
            "among the key-value heads, so `{field}` must divide `{other}`.",
            other=values["other"],
            other_value=values["other_value"],
            field=name,
            value=value,
        )
    if need == "layer_once":
        return _(
            "The field `{field}` lists layer {layer}, which `{other}` lists too: a layer is of one kind, name it once.",
            field=name,
            layer=values["layer"],
            other=values["other"],
        )
    return _(
        "The field `{field}` lists layer {value}: this model's layers are numbered {minimum} to {maximum}.",
        field=name,
        value=value,
        minimum=low,
        maximum=high,
    )


def too_large_text(values: dict[str, object]) -> str:
    """A size past any machine's memory (attn_core.PastAnyMachine's values), in this run's language."""
    if values["what"] == "weights":
        return _(
            "One layer's weights would take {bytes}: more than any machine holds (the core refuses past {limit}). "
            "Check `hidden_size`, the heads and their widths.",
            bytes=format_bytes(int(values["bytes"])),  # type: ignore[call-overload]
            limit=format_bytes(int(values["limit"])),  # type: ignore[call-overload]
        )
    return _(
        "Its caches would hold {bytes} after {tokens} tokens of {sequences}: more than any machine holds (the core "
        "refuses past {limit}). Check the widths.",
        bytes=format_bytes(int(values["bytes"])),  # type: ignore[call-overload]
        tokens=values["tokens"],
        sequences=n_("{n} sequence", "{n} sequences", int(values["batch"])),  # type: ignore[call-overload]
        limit=format_bytes(int(values["limit"])),  # type: ignore[call-overload]
    )


def shows_message(problem: ConfigProblem) -> bool:
    """Whether the page shows the parser's or the core's own (English) message: not where the page words it all."""
    return bool(problem.message) and problem.kind not in ("field", "too_large")


def problem_source(problem: ConfigProblem) -> str:
    """Whose message is shown verbatim beside the page's sentence."""
    return _("The JSON reader says (in English):") if problem.kind == "not_json" else _("The core says (in English):")


# --- captions --------------------------------------------------------------------------------------------------------
def plateau_sentences(found: list[Plateau]) -> list[str]:
    """A model whose every layer stops growing, a sentence each; models some of whose layers do, one sentence per
    length they stop at."""
    sentences_ = [
        _(
            "{model} stops growing at {tokens} tokens: every layer keeps a window, {bytes} at any length beyond.",
            model=plateau.name,
            tokens=plateau.tokens,
            bytes=format_bytes(plateau.nbytes),
        )
        for plateau in found
        if plateau.kind is None
    ]
    partial = [plateau for plateau in found if plateau.kind is not None]
    for tokens in sorted({plateau.tokens for plateau in partial}):
        models = [
            _(
                "{model}'s {kind} layers ({bytes})",
                model=plateau.name,
                kind=kind_name(plateau.kind or ""),
                bytes=format_bytes(plateau.nbytes),
            )
            for plateau in partial
            if plateau.tokens == tokens
        ]
        sentences_.append(
            _(
                "From {tokens} tokens on, some layers hold the same at every length while the others keep growing: "
                "{models}.",
                tokens=tokens,
                models=_("; ").join(models),
            )
        )
    return sentences_


def crossing_sentence(crossing: Crossing, measure: str) -> str:
    if measure == "read":
        return _(
            "{lower} and {other} cross near {tokens} tokens: before it a step of {lower} reads less, after it more.",
            lower=crossing.lower_first,
            other=crossing.other,
            tokens=crossing.tokens,
        )
    return _(
        "{lower} and {other} cross near {tokens} tokens: before it {lower} keeps less, after it more.",
        lower=crossing.lower_first,
        other=crossing.other,
        tokens=crossing.tokens,
    )


def more_crossings(count: int) -> str:
    return n_(
        "One more crossing lies farther from T (all are in the CSV's numbers).",
        "{n} more crossings lie farther from T (all are in the CSV's numbers).",
        count,
    )


# Successors whose caches the page compares at T (names of attn_core.published), when both are drawn
SUCCESSORS = (("DeepSeek-V3", "DeepSeek-V3.2"), ("DeepSeek-V3", "DeepSeek-V4-Flash"))


def successor_sentence(old: ModelCurves, new: ModelCurves, tokens: int) -> str:
    i, j = old.at(tokens), new.at(tokens)
    return _(
        "At {tokens} tokens {new} holds {held} of {old}'s cache, and a decoding step reads {read} of what {old}'s "
        "reads.",
        tokens=tokens,
        new=new.name,
        old=old.name,
        held=percent(new.held[j] / old.held[i], 1),
        read=percent(new.read[j] / old.read[i], 1),
    )


def reading_sentence(curves: ModelCurves, tokens: int) -> str | None:
    """Said of a model whose decoding step reads clearly less than it holds (a window's worth, a top-k)."""
    i = curves.at(tokens)
    held, read = curves.held[i], curves.read[i]
    if not held or read >= 0.9 * held:
        return None
    return _(
        "At {tokens} tokens a decoding step of {model} reads {read} of the {held} it holds ({share}).",
        tokens=tokens,
        model=curves.name,
        read=format_bytes(read),
        held=format_bytes(held),
        share=percent(read / held, 1),
    )


def extremes_sentence(models: list[ModelCurves], tokens: int, measure: str) -> str:
    """The largest and smallest cache at this length among the models made for it (the lesson quotes the same)."""
    found = extremes(models, tokens, measure)
    if found is None:
        return ""
    return _(
        "Of the {count} models made for {tokens} tokens or more, at that length {largest} needs the most ({big}) and "
        "{smallest} the least ({small}): {ratio}× apart.",
        count=found.count,
        tokens=tokens,
        largest=found.largest,
        big=format_bytes(found.big),
        smallest=found.smallest,
        small=format_bytes(found.small),
        ratio=sig(found.big / found.small),
    )


AXES = {
    "layers": N_("layers"),
    "tokens": N_("tokens"),
    "width": N_("width"),
    "bytes": N_("bytes"),
    "total": N_("all four"),
}


def axis_leaders(cuts: list[AxisCuts], tokens: int) -> str:
    """Which model cuts each axis most at this length, as the picture shows it."""
    parts = [
        _("{axis}: {model} ({factor})", axis=_(AXES[axis]), model=best.name, factor=times(getattr(best, axis)))
        for axis, best in leaders(cuts).items()
    ]
    if not parts:
        return ""
    return _("At {tokens} tokens the largest cut on each axis — {list}.", tokens=tokens, list=_("; ").join(parts))


def sentences_of(*parts: str | None) -> str:
    return sentences(*(part for part in parts if part))
