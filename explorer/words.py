"""Numbers in sentences: a count with its noun in agreement, for every page and probe (no UI code, no imports)."""


def count(n: int, noun: str, plural: str | None = None) -> str:
    """count(1, "head") -> '1 head', count(128, "group") -> '128 groups', count(2, "KV head") -> '2 KV heads'.
    Thousands get separators; `plural` is for nouns that do not just take an "s"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
