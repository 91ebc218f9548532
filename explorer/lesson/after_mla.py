"""The lesson's second chapter, after MLA: the cache's four axes and the designs of 2025-26 that cut each, as steps
13 onwards (explorer/lesson/steps.py appends them, so links to the first chapter's steps keep opening what they did).

Every step quotes numbers ({placeholders}) that its view computes from the measurement its chart shows
(explorer/lesson/after_mla_views.py: NUMBERS), so LaTeX braces are doubled here."""

from __future__ import annotations

from explorer.i18n import N_


def step(key: str, title: str, text: str, question: str, answer: str, *, lead: str) -> dict[str, str]:
    """A step's fields, as steps.Step takes them (steps.py makes the records: this module imports none of its
    siblings)."""
    return {"key": key, "title": title, "text": text, "question": question, "answer": answer, "lead": lead}


CHAPTER: tuple[dict[str, str], ...] = (
    step(
        "axes",
        N_("After MLA: the cache's four axes"),
        N_(
            "A KV cache is **layers × tokens × width × bytes**: $L \\cdot T \\cdot n \\cdot b$, with $n$ numbers "
            "per token per layer of $b$ bytes each. At {tokens} tokens {plain_model} (GQA, every token in every layer) would keep {plain_bytes}. The first "
            "chapter cut the width: MLA's latent vector makes {mla_model}'s entry {mla_width}× narrower than MHA's. "
            "The designs after MLA cut the other three axes too; the grid shows by how much each published model "
            "keeps less than MHA holding every token in 16 bits on every layer."
        ),
        N_("Which axis does a sliding window cut, and which one a 4-bit cache?"),
        N_(
            "A window cuts tokens: its layers stop keeping old ones. Four bits instead of sixteen cut bytes, "
            "four times, whatever the design. The axes multiply: {best_model} cuts {best_total}× in all at "
            "{tokens} tokens."
        ),
        lead=N_(
            "Cache = **layers × tokens × width × bytes**. The first chapter cut the width; at {tokens} tokens "
            "{best_model} keeps {best_total}× less than MHA would."
        ),
    ),
    step(
        "window",
        N_("Sliding windows, local and global layers"),
        N_(
            "A sliding-window layer attends only to the last $W$ tokens, the band along the heatmap's diagonal: "
            "its cache is $2 \\cdot G \\cdot D \\cdot \\min(T, W - 1)$ and stops growing at $T = W$. Mistral 7B "
            "put a window on every layer; Gemma 3 and gpt-oss mix window layers with full ones. {model} has "
            "{sliding} window layers ($W$ = {window}) and {full} full ones: at {tokens} tokens the {sliding} hold "
            "{sliding} × {kept} tokens × {row} = {sliding_bytes} together, the {full} full ones {full_bytes}."
        ),
        N_("Why keep any full layers, if windows cost so little?"),
        N_(
            "In a window layer a token farther back than $W$ is unreachable directly; information can only be "
            "passed on from layer to layer. The full layers read every token at once, and they hold almost the "
            "whole cache: {full_share} of it at {tokens} tokens in {model}."
        ),
        lead=N_(
            "A window layer keeps $W - 1$ tokens (the next brings its own key). {model}: {sliding} window layers "
            "($W$ = {window}) hold {sliding} × {kept} × {row} = {sliding_bytes}, its {full} full layers {full_bytes} "
            "at {tokens} tokens."
        ),
    ),
    step(
        "sinks",
        N_("Attention sinks: the first token"),
        N_(
            "Trained heads park attention they do not need on the first token: in SmolLM2-135M {sinks} of {heads} "
            "heads put over half of their weight there (left). A window drops that token, and the softmax has to "
            "put the weight elsewhere. StreamingLLM keeps the first tokens beside the window. The lab measured "
            "it: with a window of {window} tokens in every layer, perplexity is {without} without the first "
            "token and {with_sink} keeping it, against {original} with the whole cache (right)."
        ),
        N_("Keeping one token out of thousands: why does it matter so much?"),
        N_(
            "Not for what the token says but for where the weight goes: the heads' softmax weights must sum to 1, "
            "and the sink is where they put what they do not use. Without it that weight lands on the tokens in "
            "the window. Four first tokens instead of one: perplexity {four}, hardly better than one."
        ),
        lead=N_(
            "{sinks} of {heads} heads of SmolLM2 put over half their weight on the first token. Window {window}: "
            "perplexity {without} without it, {with_sink} with it."
        ),
    ),
    step(
        "sparse",
        N_("Reading less: DeepSeek-V3.2's indexer"),
        N_(
            "DeepSeek Sparse Attention keeps MLA's cache whole, plus a small indexer key of width $d_I$ per token. "
            "A light indexer scores every token, and MLA reads only the top $k$ = {top_k}: a step reads "
            "$d_I \\cdot T + (d_c + d_h^R) \\cdot \\min(T, k)$ numbers per layer. At {tokens} tokens "
            "{model} holds {held} ({held_share} of {base}'s) but a decoding step reads {read}: {read_share} of "
            "what {base}'s reads."
        ),
        N_("The cache is not smaller. What is gained, and what would you still need?"),
        N_(
            "Decoding is limited by reading memory. A step reads every token's small indexer key but MLA's entries "
            "for only $k$ tokens: {read_share} of what {base}'s step reads at {tokens} tokens, falling towards "
            "$d_I / (d_c + d_h^R)$ as $T$ grows. The memory to hold the whole cache is still needed: {held} per "
            "sequence."
        ),
        lead=N_(
            "V3.2 keeps MLA's whole cache but reads only the top $k$ = {top_k} tokens an indexer picks: at "
            "{tokens} tokens it holds {held} and a step reads {read}."
        ),
    ),
    step(
        "compressed",
        N_("Compressing the tokens: DeepSeek-V4"),
        N_(
            "DeepSeek-V4 cuts the tokens axis: its layers pool every $m$ tokens into one compressed entry ($m$ = "
            "{csa_rate} in its CSA layers, which a top-$k$ indexer reads; $m$ = {hca_rate} in its HCA layers, read "
            "whole), beside a short window of recent tokens kept exact. Each entry is one shared head of width "
            "$D$ = {width} that serves as key and value both (K = V): the width MQA had. At {tokens} tokens "
            "{model} holds {held}, {held_share} of {base}'s."
        ),
        N_("V4 returned to one shared K/V head. Why can it afford to?"),
        N_(
            "Its cache is small along the tokens axis already, {tokens_cut}× at {tokens} tokens, so one wide "
            "entry for keys and values is affordable, and the decoding step reads it without MLA's absorption."
        ),
        lead=N_(
            "Every $m$ tokens pooled into one entry of one shared K = V head: at {tokens} {model} holds {held}, "
            "{held_share} of {base}'s."
        ),
    ),
    step(
        "linear",
        N_("State instead of cache: linear attention"),
        N_(
            "A linear attention layer keeps no tokens at all: it updates a fixed state $S_t = S_{{t-1}} + v_t "
            "k_t^\\top$ (with a gate and a delta rule in Gated DeltaNet and Kimi's KDA), $d_k \\times d_v$ per "
            "head, whatever $T$. {model} has {linear} such layers and {full} full-attention layers: the {linear} "
            "hold {linear_bytes} at any length, the {full} full ones {full_bytes} at {tokens} tokens. Kimi Linear "
            "mixes in the same way, with MLA as its full layers."
        ),
        N_("A fixed state is so cheap. Why keep full-attention layers at all?"),
        N_(
            "A fixed state has to forget: it cannot recall an exact token from far back, and copying and "
            "retrieval suffer. A few full layers keep exact recall; the mix cuts the layers axis, {layers_cut}× "
            "here at {tokens} tokens."
        ),
        lead=N_(
            "A fixed state $S$ instead of tokens: {model}'s {linear} linear layers hold {linear_bytes} at any "
            "length, its {full} full ones {full_bytes} at {tokens}."
        ),
    ),
    # After the hybrids: the layers axis once more, first the price of leaving it uncut, then a cut that keeps
    # attention in every layer.
    step(
        "full_again",
        N_("Why MiniMax-M2 went back to full attention"),
        N_(
            "{hybrid} was a hybrid of the previous step's kind: {linear} lightning-attention layers (a decayed linear "
            "state) and {full} full ones, seven to one. Its successor {model} has {layers} layers of plain GQA, every "
            "one full. Its authors gave their reasons (`{source}`): in a production system efficient attention does "
            "not yet beat full attention. Its weaknesses hide from the benchmarks they could afford to run (long "
            "multi-step reasoning, agents), it is fragile in low precision, and the serving stack around it (prefix "
            "caching, speculative decoding) lags. The price, measured: at {tokens} tokens {model} holds {m2_bytes}, "
            "{hybrid} {m1_bytes}."
        ),
        N_("{model} holds {ratio}× {hybrid}'s cache at {tokens} tokens. What does that buy?"),
        N_(
            "Exact recall in every layer, and the serving stack that full attention already has. The bill is memory "
            "per sequence: {m2_bytes} against {m1_bytes} at {tokens} tokens, so fewer long sequences fit on a GPU; "
            "{hybrid}'s {linear} lightning layers hold {linear_bytes} at any length."
        ),
        lead=N_(
            "{hybrid}: {linear} lightning layers, {full} full. {model}: {layers} full layers again, at {tokens} "
            "tokens {m2_bytes} against {m1_bytes}."
        ),
    ),
    step(
        "shared_kv",
        N_("Layers that share a cache: Gemma 3n"),
        N_(
            "The layers axis can be cut without giving up attention anywhere. In {model} the last {shared} of its "
            "{layers} layers compute queries only: each reads the keys and values of an earlier layer of its type "
            "(layer {sliding_source} for the window layers, {full_source} for the full ones, counted from 0) and "
            "holds nothing. Measured at {tokens} tokens, its published context: {held} with the sharing, {unshared} "
            "if every layer kept its own, {saved} less."
        ),
        N_("The shared layers still attend to every token. What do they give up?"),
        N_(
            "Keys and values of their own: a shared layer can only ask new questions (its queries) of what an earlier "
            "layer stored, so what the last layers work out never reaches the cache. The saving is their share of "
            "it, {saved} at {tokens} tokens, most of it from the {full_shared} full layers among them, which would "
            "each hold {per_full}."
        ),
        lead=N_(
            "{model}'s last {shared} of {layers} layers read an earlier layer's keys and values and hold nothing: "
            "at {tokens} tokens {held} instead of {unshared}."
        ),
    ),
    step(
        "bits",
        N_("Fewer bits: quantised caches"),
        N_(
            "The fourth axis: store each cached number in $b$ bits, $\\hat x = s \\cdot \\mathrm{{round}}((x - z)/s) "
            "+ z$, one scale $s$ and zero $z$ per group of numbers. Keys have outlier channels, a few far larger "
            "than the rest. Grouped per token, a scale spans every channel and follows the outlier; grouped per "
            "channel (KIVI), each channel gets its own. SmolLM2's real keys in layer {layer} at {bits} bits: "
            "error {token_error} of the keys per token, {channel_error} per channel."
        ),
        N_("Why are values still quantised per token?"),
        N_(
            "Values have no outlier channels, and what attention does with them is mix whole tokens: the error of "
            "a token's value averages out in the weighted sum, so a scale per token serves. Keys decide the "
            "weights through $q \\cdot k$, and there a large channel's scale would drown the small ones."
        ),
        lead=N_(
            "Keys have outlier channels: SmolLM2's real keys (layer {layer}) at {bits} bits lose {token_error} "
            "grouped per token, {channel_error} per channel."
        ),
    ),
    step(
        "choose2026",
        N_("Choosing in 2026"),
        N_(
            "The published models made for {tokens} tokens or more, at that length, one sequence, 16 bits: {largest} keeps the most ({big}), "
            "{smallest} the least ({small}), {ratio}× less. Each cut a different axis: width (GQA, MLA), tokens "
            "(windows, compression), layers (hybrids with linear attention), and any of them can add bytes "
            "(a quantised cache). What the cuts cost is quality, measured as the lab did for the first chapter."
        ),
        N_("Your model must serve documents of {tokens} tokens on one GPU. Which axis would you cut first?"),
        N_(
            "Read the chart at {tokens}: the designs that stop growing (windows, states) or grow slowly (compressed "
            "entries) keep long contexts cheap; MLA and GQA grow with every token. Quality decides between them, "
            "and bytes can be cut on top of any. The lab measured that choice on SmolLM2, every axis cut one way: "
            "within {lab_share} of the original's cache at {lab_context} tokens, the cut that hurts least is "
            "{lab_model} ({lab_axis}), {lab_times} the original's perplexity. "
            "[Explore this in the lab]({lab_link})."
        ),
        lead=N_(
            "The {count} models made for {tokens} or more, at {tokens}: {big} ({largest}) to {small} ({smallest}), "
            "{ratio}× apart."
        ),
    ),
)
