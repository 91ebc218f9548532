"""The lab's stored window table (assets/window_table.json, written by benchmarks/window_sinks.py): the trained model's
perplexity on the lab's text under sliding windows, with and without its first tokens kept, as rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .stored import TABLE_PATH as LAB_TABLE_PATH

WINDOW_TABLE_PATH = LAB_TABLE_PATH.with_name("window_table.json")


@dataclass(frozen=True)
class WindowRow:
    key: str
    window: int | None  # None: the original, every token kept
    sink_tokens: int  # first tokens kept beside the window
    pattern: str | None  # "every" layer windowed, or a published model's local/global pattern
    perplexity: float
    cache_nbytes: dict[int, int]  # context length -> bytes held by the whole model (float32)


@dataclass(frozen=True)
class WindowTable:
    piece: int  # tokens per scored piece of the text
    tokens: int  # tokens of the text scored
    rows: tuple[WindowRow, ...]

    def row(self, window: int | None, sink_tokens: int = 0, pattern: str | None = "every") -> WindowRow:
        """The row measured at these settings (the original for window None). ValueError naming them if none was."""
        for row in self.rows:
            if (row.window, row.sink_tokens) == (window, sink_tokens) and (window is None or row.pattern == pattern):
                return row
        raise ValueError(
            f"window={window}, sink_tokens={sink_tokens}, pattern={pattern!r} was not measured: run "
            "`python benchmarks/window_sinks.py` for it."
        )

    def windows(self, pattern: str = "every") -> list[int]:
        return sorted({row.window for row in self.rows if row.window is not None and row.pattern == pattern})


def load_window_table(path: Path = WINDOW_TABLE_PATH) -> WindowTable:
    """The stored table; OSError if the file is missing, ValueError if it is not the table window_sinks.py writes."""
    table = json.loads(path.read_text(encoding="utf-8"))
    try:
        rows = tuple(
            WindowRow(
                key=str(row["key"]),
                window=row["window"],
                sink_tokens=int(row["sink_tokens"]),
                pattern=row["pattern"],
                perplexity=float(row["perplexity"]),
                cache_nbytes={int(t): int(n) for t, n in row["cache_nbytes"].items()},
            )
            for row in table["rows"]
        )
        return WindowTable(int(table["evaluation"]["window"]), int(table["evaluation"]["tokens"]), rows)
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path.name} is not a window table ({error!r} is missing): re-run its benchmark.") from error
