"""The lesson's steps, in the order of the course notes' argument: what each says, asks and shows.

Words are marked for the catalog here and translated where shown (pages/lesson.py). Each step names the view in
explorer.lesson.views that draws its one chart.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.i18n import N_
from explorer.params import IntRange


@dataclass(frozen=True)
class Step:
    key: str  # names its view in explorer.lesson.views (STEP_VIEWS)
    title: str
    text: str  # a few sentences, markdown
    question: str  # for the class
    answer: str  # folded away
    lead: str  # presenter mode's few sentences: the slide shows them above its chart, the full text folded below


STEPS: tuple[Step, ...] = (
    Step(
        "sdpa",
        N_("Scaled dot-product attention, on real numbers"),
        N_(
            "Each token asks a **query** $q$, offers a **key** $k$ and carries a **value** $v$. Attention scores every "
            "query against every key, $QK^\\top$, divides by $\\sqrt{d_k}$, masks the future (a causal mask), turns "
            "each row into weights with softmax and mixes the values: "
            "$\\mathrm{softmax}(QK^\\top/\\sqrt{d_k} + M)\\,V$. Below, one head of a real layer does exactly that on "
            "a six-token sentence."
        ),
        N_("Why divide the scores by $\\sqrt{d_k}$?"),
        N_(
            "A dot product of two random $d_k$-wide vectors grows like $\\sqrt{d_k}$. Without the scaling, wider heads "
            "give larger scores and the softmax becomes nearly one-hot: one key takes all the weight and the "
            "gradients vanish."
        ),
        lead=N_(
            "$\\mathrm{softmax}(QK^\\top/\\sqrt{d_k} + M)\\,V$ step by step: one head of a real layer scores, scales, "
            "masks and weighs a six-token sentence."
        ),
    ),
    Step(
        "heads",
        N_("Many heads"),
        N_(
            "Multi-head attention (MHA) splits $d_{model}$ into $h$ heads of width $d_h = d_{model}/h$. Each head has "
            "its own $W^Q$, $W^K$, $W^V$ and attends on its own; the heads' outputs are concatenated and mixed by "
            "$W^O$. Same sentence, same layer width: eight ways of looking at it."
        ),
        N_("The heads together cost about as much as one head of full width. Why?"),
        N_(
            "Each head works in $d_h = d_{model}/h$ dimensions: $h$ heads of width $d_{model}/h$ do the same number of "
            "multiply-adds in the projections as one head of width $d_{model}$. What grows with $h$ is only the number "
            "of attention maps."
        ),
        lead=N_(
            "$h$ heads of width $d_h = d_{model}/h$, each with its own $W^Q$, $W^K$, $W^V$: eight ways of looking at "
            "one sentence."
        ),
    ),
    Step(
        "cache",
        N_("Why decoding needs a cache, and what it weighs"),
        N_(
            "A model writes one token at a time, and each new token attends to all the tokens before it. Their keys "
            "and values do not change, so they are computed once and kept: the **KV cache**. It changes the cost, "
            "never the result. MHA keeps $2 \\cdot h \\cdot d_h$ numbers per token per layer, and the cache grows "
            "with every token, every sequence in the batch and every layer."
        ),
        N_("Without a cache, how much work does generating the $n$-th token take, and with one?"),
        N_(
            "Without: the keys and values of all $n$ tokens are recomputed, so the projections cost grows with $n$ "
            "at every step ($n^2$ over a whole answer). With a cache: only the new token is projected; reading the "
            "cache still grows with $n$, and that reading, from memory, is what limits decoding speed."
        ),
        lead=N_(
            "Decoding keeps every token's keys and values: the **KV cache**, $2 \\cdot h \\cdot d_h$ numbers per token "
            "per layer, growing with every token."
        ),
    ),
    Step(
        "mqa",
        N_("Multi-query attention (MQA)"),
        N_(
            "If memory is the limit, share it: in MQA all query heads read **one** key head and **one** value head. "
            "The queries stay per head, so heads still look at different things, but the cache per token falls from "
            "$2 \\cdot h \\cdot d_h$ to $2 \\cdot d_h$: $h$ times smaller. The chart is read off a real layer: a line "
            "joins each query head to the store it was found reading."
        ),
        N_("MQA makes the cache $h$ times smaller. What does it give up?"),
        N_(
            "All heads now score the same keys and mix the same values: they can differ only through their queries. "
            "That costs quality (models converted to MQA need further training), and training can be less stable."
        ),
        lead=N_(
            "In MQA all query heads read **one** K/V head: the cache per token falls from $2 \\cdot h \\cdot d_h$ to "
            "$2 \\cdot d_h$."
        ),
    ),
    Step(
        "gqa",
        N_("Grouped-query attention (GQA) and its groups"),
        N_(
            "GQA is the middle road: $h$ query heads in $g$ **groups**, each group sharing one K/V head; head $i$ "
            "reads group $\\lfloor i / (h/g) \\rfloor$. The cache per token is $2 \\cdot g \\cdot d_h$. With $g = h$ "
            "it is MHA, with $g = 1$ MQA. Move the groups."
        ),
        N_("With 8 query heads, which group counts are possible, and which head reads KV head 1 when $g = 2$?"),
        N_(
            "$g$ must divide $h$: 1, 2, 4 or 8. With $g = 2$ each group has 4 heads, so heads 4–7 read KV head 1 "
            "($\\lfloor i/4 \\rfloor = 1$)."
        ),
        lead=N_(
            "$h$ query heads in $g$ **groups**, each group sharing one K/V head: $2 \\cdot g \\cdot d_h$ numbers per "
            "token. Move the groups."
        ),
    ),
    Step(
        "trained",
        N_("A real model: SmolLM2-135M"),
        N_(
            "Real models choose GQA (Llama 2 70B, Llama 3, Mistral, Qwen). SmolLM2-135M, a trained model running "
            "through this explorer's own layers, has 9 query heads sharing 3 KV heads in each of its 30 layers. Here "
            "it answers a question token by token, and its cache is measured as it writes."
        ),
        N_("How much larger would its cache be as MHA, and how much smaller as MQA?"),
        N_(
            "MHA would keep 9 K/V heads instead of 3: three times the cache. MQA would keep 1: a third of it. The "
            "ratio is the number of KV heads, whatever the text."
        ),
        lead=N_(
            "SmolLM2-135M has 9 query heads sharing 3 KV heads in each of its 30 layers: its cache, measured as it "
            "writes."
        ),
    ),
    Step(
        "pitfall",
        N_("The pitfall: caching repeated heads"),
        N_(
            "A common GQA implementation repeats each K/V head for every query head of its group "
            "(`repeat_interleave`) and then caches the copies. The outputs are right, but the cache is as large as "
            "MHA's: the saving is thrown away. Cache the $g$ heads as projected, and repeat (or better, fold the "
            "queries) only inside attention."
        ),
        N_("The repeated cache gives the same outputs. How would you notice the bug?"),
        N_(
            "Only by measuring memory: compare the cache's bytes with $2 \\cdot g \\cdot d_h$ per token. Here the "
            "repeated cache lands exactly on MHA's line, $h/g$ times what GQA needs."
        ),
        lead=N_(
            "Caching the K/V heads after `repeat_interleave` gives the right outputs and MHA's cache: the saving is "
            "thrown away."
        ),
    ),
    Step(
        "mla",
        N_("MLA: low-rank joint KV compression"),
        N_(
            "Multi-head latent attention (MLA, DeepSeek-V2/V3) caches neither keys nor values. Each token is "
            "compressed by a down-projection into one **latent vector** $c^{{KV}}$ of width $d_c$, and every head "
            "rebuilds its own keys and values from it by up-projections $W^{{UK}}$, $W^{{UV}}$. The notes' example: "
            "{model} keeps {mha} numbers per token per layer as MHA, {mla} as MLA."
        ),
        N_("Where does the {mla} come from?"),
        N_(
            "$d_c + d_h^R$ = {latent} + {rope}: the latent vector and the decoupled rotary key. MHA keeps 2 · {heads} "
            "· {head_dim} = {mha}, so MLA's cache is {ratio}× smaller, about the cache of GQA with {groups} groups, "
            "while every head keeps keys and values of its own."
        ),
        lead=N_(
            "MLA caches one **latent vector** $c^{{KV}}$ per token, and every head rebuilds its keys and values from "
            "it: {model} keeps {mha} numbers per token per layer as MHA, {mla} as MLA."
        ),
    ),
    Step(
        "rope",
        N_("Decoupled RoPE, and why it is needed"),
        N_(
            "RoPE rotates each key by its position. If the keys rebuilt from $c^{KV}$ were rotated, the rotation would "
            "sit between $W^{UK}$ and the query and change with every position, so $W^{UK}$ could no longer be "
            "absorbed (next step). MLA keeps its content keys unrotated and adds one small **rotary key** $k^R$ "
            "(width $d_h^R$), shared by all heads and cached beside the latent vector."
        ),
        N_("Why share one rotary key across heads instead of one per head?"),
        N_(
            "It is cached: a rotary key per head would add $h \\cdot d_h^R$ numbers per token, a shared one adds "
            "$d_h^R$. Position needs only a few dimensions; the content lives in the latent vector."
        ),
        lead=N_(
            "Rotated keys would keep $W^{UK}$ from being absorbed: MLA adds one small **rotary key** $k^R$, shared by "
            "all heads and cached beside $c^{KV}$."
        ),
    ),
    Step(
        "absorb",
        N_("Weight absorption"),
        N_(
            "Rebuilding every cached token's keys at every step would cost more than MHA. But "
            "$q_h \\, (c^{KV} W^{UK}_h)^\\top = (q_h W^{UK\\top}_h)\\, c^{KV\\top}$: fold $W^{UK}$ into the query and "
            "$W^{UV}$ into the output, and attention runs directly on the cached latent vectors, like MQA with one "
            "wide KV head. Below, one decode step computed that way against the full, up-projected pass."
        ),
        N_("The naive and the absorbed decode give the same numbers. What differs?"),
        N_(
            "The cost: the naive way up-projects the whole cache at every step, so its work grows with $h \\cdot d_h "
            "\\cdot d_c$ per cached token; the absorbed way reads each latent vector once. The rotary key is why RoPE "
            "had to be decoupled: a rotation between $q$ and $W^{UK}$ would not fold."
        ),
        lead=N_(
            "Fold $W^{UK}$ into the query and $W^{UV}$ into the output: attention runs on the cached latent vectors "
            "directly. One decode step, computed that way."
        ),
    ),
    Step(
        "choose",
        N_("Choosing, with measured costs"),
        N_(
            "Which to choose? The trade is cache against quality. The lab converted a trained model (SmolLM2-135M) "
            "to MHA, MQA and MLA and measured each one's perplexity against its cache: first as converted, without "
            "any training (●), then healed (★): only the converted attention trained back, for minutes, where the "
            "papers behind these variants trained on billions of tokens. Converted, MLA keeps more quality per byte "
            "than MQA; healed, it comes close to the original at a smaller cache. New large models choose GQA or "
            "MLA; MQA where memory matters most."
        ),
        N_("At the same cache per token, which conversion keeps more quality, and why?"),
        N_(
            "MLA: find the two points at the same cache per token. MLA's latent vector is a mix of all KV heads, "
            "fitted to keep as much of them as its width allows, from which each head still rebuilds keys of its "
            "own; MQA forces every head onto one shared key."
        ),
        lead=N_(
            "SmolLM2-135M converted to MHA, MQA and MLA: perplexity against cache per token, as converted (●) and "
            "healed (★)."
        ),
    ),
    # Last, after the choice it qualifies: a link to any earlier step opens the step it always did.
    Step(
        "healed",
        N_("After healing: the conversions trained back"),
        N_(
            "The papers behind these conversions never stopped at converting: GQA was made from MHA checkpoints "
            "and then trained further, and the MLA conversions of MHA2MLA and TransMLA were fine-tuned. The lab did "
            "the same at a small scale. Each converted model trained only its new attention, first layer by layer "
            "to reproduce the original's outputs, then through the whole model to match the original's next-token "
            "predictions: minutes on a CPU rather than billions of tokens. Below, the original and every healed "
            "conversion up close."
        ),
        N_("Which conversion comes closest to the original once healed, and at what share of its cache?"),
        N_(
            "{closest} Converted without training it was at perplexity {before}. A conversion judged before any "
            "training undersells it: the untrained weights are only a starting point."
        ),
        lead=N_(
            "Each conversion trained back only its new attention, for minutes on a CPU: the original and every healed "
            "conversion up close."
        ),
    ),
)

# The second chapter, after MLA, appended: steps 13 onwards, so links to the first chapter's steps keep theirs.
from explorer.lesson.after_mla import CHAPTER  # noqa: E402

# Each chapter's title and its first step's number, in order.
CHAPTERS: tuple[tuple[str, int], ...] = (
    (N_("From attention to MLA"), 1),
    (N_("After MLA: the cache's four axes"), len(STEPS) + 1),
)
STEPS = STEPS + tuple(Step(**fields) for fields in CHAPTER)

STEP = IntRange("step", 1, len(STEPS), 1)


def chapter_of(number: int) -> tuple[int, str]:
    """The chapter (counted from 1) and its title that step `number` is in."""
    index = max(i for i, (_title, first) in enumerate(CHAPTERS) if first <= number)
    return index + 1, CHAPTERS[index][0]
