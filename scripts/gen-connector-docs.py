#!/usr/bin/env python3
"""Writes each connector's parameter table into its page, docs/connectors/<Type>.md.

The tables come from the binary itself (`skipprd connectors --markdown`, built from each connector's ParamSpec list),
between the markers `<!-- params:begin <Type> <source|sink> -->` and `<!-- params:end -->`. A block already in the
page is replaced; a page or a block that is missing is added (a new page gets a stub to fill in by hand).

    python3 scripts/gen-connector-docs.py [--binary build/skipprd]           # rewrite the blocks
    python3 scripts/gen-connector-docs.py --check [--binary build/skipprd]   # exit 1 naming every block that differs

`tests/e2e/connector_docs_test.cc` (ConnectorDocs.*) makes the same comparison in `make test`.
"""
import argparse
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "connectors"
BLOCK = re.compile(r"<!-- params:begin (\S+) (source|sink) -->\n.*?<!-- params:end -->\n", re.S)


def blocks_from_binary(binary: str) -> list[tuple[str, str, str]]:
    out = subprocess.run([binary, "connectors", "--markdown"], check=True, capture_output=True, text=True).stdout
    return [(m.group(1), m.group(2), m.group(0)) for m in BLOCK.finditer(out)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build" / "skipprd"))
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page differs")
    args = parser.parse_args()

    problems = []
    printed = set()
    for type_name, kind, block in blocks_from_binary(args.binary):
        printed.add((type_name, kind))
        page = PAGES / f"{type_name}.md"
        text = page.read_text() if page.exists() else ""
        marker = f"<!-- params:begin {type_name} {kind} -->\n"
        start = text.find(marker)
        if start >= 0:
            end = text.find("<!-- params:end -->\n", start)
            if end < 0:
                problems.append(f"{page}: {marker.strip()} has no params:end")
                continue
            end += len("<!-- params:end -->\n")
            current = text[start:end]
            if current == block:
                continue
            problems.append(f"{page}: the {kind} parameters differ from the binary's")
            text = text[:start] + block + text[end:]
        else:
            problems.append(f"{page}: no {kind} parameter block")
            if not text:
                text = f"# {type_name}\n\n(What it does, its guarantee, behaviour, how it is tested: to be written.)\n"
            text = text.rstrip("\n") + f"\n\n## {kind.capitalize()} parameters\n\n" + block
        if not args.check:
            PAGES.mkdir(parents=True, exist_ok=True)
            page.write_text(text)
    for page in sorted(PAGES.glob("*.md")):
        for m in BLOCK.finditer(page.read_text()):
            if (m.group(1), m.group(2)) not in printed:
                problems.append(f"{page}: a {m.group(2)} block for {m.group(1)}, which this build does not have")
    for problem in problems:
        print(problem, file=sys.stderr)
    if args.check:
        return 1 if problems else 0
    print(f"{len(printed)} parameter blocks checked, {len(problems)} updated or reported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
