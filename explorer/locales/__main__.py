import json
import sys

from . import extract, fill, problems, read_catalog, update

if "--check" in sys.argv:
    found = problems(read_catalog(), extract())
    print("\n".join(found) or "the catalog is complete")
    sys.exit(1 if found else 0)
if "--fill" in sys.argv:
    path = sys.argv[sys.argv.index("--fill") + 1]
    with open(path, encoding="utf-8") as file:
        unknown = fill(json.load(file))
    print("\n".join(f"not in the catalog: {msgid!r}" for msgid in unknown) or "filled")
    sys.exit(1 if unknown else 0)
catalog = update()
left = [line for line in problems(catalog, extract()) if line.startswith("untranslated")]
print(f"{len(catalog)} messages; {len(left)} to translate" + "".join(f"\n  {line}" for line in left[:50]))
