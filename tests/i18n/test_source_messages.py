"""Every message in the source reaches the catalog. Babel's extractor does not look inside f-strings, so a `_()`
written in one was never translated; and a message that is itself an f-string cannot be looked up at all."""

from __future__ import annotations

import ast
from pathlib import Path

from explorer.locales import KEYWORDS, ROOT, extract

SOURCE_FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "explorer").rglob("*.py"))]


def messages_in(path: Path) -> list[tuple[int, str | None]]:
    """(line, message) of every call of _(), n_() or N_(); None for a message that is not a plain string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KEYWORDS and node.args:
            first = node.args[0]
            plain = isinstance(first, ast.Constant) and isinstance(first.value, str)
            found.append((node.lineno, first.value if plain else None))
    return found


def inside_f_strings(path: Path) -> set[int]:
    """Lines of the keyword calls written inside an f-string's braces (a message in one is extracted only if the same
    words happen to be asked for elsewhere)."""
    lines = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            lines |= {
                call.lineno
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in KEYWORDS
            }
    return lines


def test_every_message_in_the_source_is_in_the_catalog():
    catalog = {message.id if isinstance(message.id, str) else message.id[0] for message in extract() if message.id}
    problems = []
    for path in SOURCE_FILES:
        where = path.relative_to(ROOT)
        nested = inside_f_strings(path)
        for line, message in messages_in(path):
            if message is None:
                continue  # a name: its message is written (and extracted) where N_() marks it
            if line in nested:
                problems.append(f"{where}:{line}: {message!r} inside an f-string (the extractor skips it)")
            elif message not in catalog:
                problems.append(f"{where}:{line}: {message[:60]!r} is not extracted")
    assert problems == []


def test_a_message_inside_an_f_string_is_found(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("label = f\"{_('Tokens')}: {n}\"\n", encoding="utf-8")
    assert inside_f_strings(sample) == {1}
