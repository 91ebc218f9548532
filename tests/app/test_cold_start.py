"""A fresh server's first link: Streamlit's old pages/ folder mode runs the page file itself, under a menu of file
names, until it is left (explorer/shell.py). Left before torch is imported, the file names show for a moment only,
and app.py draws its own menu, in the link's language, before the heavy imports too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE_FILES = sorted((REPO / "pages").glob("*.py"))


def first_import_of_ours(path: Path) -> str:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            if name.split(".")[0] in {"attn_core", "explorer"}:
                return name
    return ""


@pytest.mark.parametrize("path", PAGE_FILES, ids=[path.stem for path in PAGE_FILES])
def test_every_page_leaves_the_pages_folder_mode_before_anything_heavy(path):
    assert first_import_of_ours(path) == "explorer.shell"


def imports_torch(code: str) -> bool:
    answer = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint('torch' in sys.modules)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 0, answer.stderr
    return answer.stdout.strip() == "True"


def test_the_menu_and_the_way_out_of_the_folder_mode_import_no_torch():
    # What app.py imports before its menu, and explorer.shell: each runs before a cold server's ~1.5 s torch import.
    menu_imports = [
        line for line in (REPO / "app.py").read_text(encoding="utf-8").splitlines() if line.startswith("from explorer")
    ]
    assert menu_imports, "app.py imports nothing of explorer's?"
    assert not imports_torch("\n".join([*menu_imports, "import explorer.shell"]))
    assert imports_torch("import explorer.state")  # the check can fail: the pages' machinery does import it
