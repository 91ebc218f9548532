import sys

from . import extract, problems, read_catalog, update

if "--check" in sys.argv:
    found = problems(read_catalog(), extract())
    print("\n".join(found) or "the catalog is complete")
    sys.exit(1 if found else 0)
catalog = update()
left = [line for line in problems(catalog, extract()) if line.startswith("untranslated")]
print(f"{len(catalog)} messages; {len(left)} to translate" + "".join(f"\n  {line}" for line in left[:50]))
