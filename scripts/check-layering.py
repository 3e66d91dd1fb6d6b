#!/usr/bin/env python3
"""The include rule of src/: a connector is one folder, and shared clients live in src/clients/.

A file in sources/<name>/ or sinks/<name>/ may include its own folder, the shared helpers at the top of its layer
(sources/*.h, sinks/*.h), core/, formats/ and clients/ -- never another connector's folder, the other layer, the WAL,
the engine or the config. formats/ and wal/ may use core/ and clients/; clients/<name>/ may use core/ and other
clients; core/ only itself. Prints every include that breaks the rule and exits 1 when there is one.
"""
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def allowed(rel: pathlib.PurePosixPath, target: str) -> bool:
    parts = rel.parts
    layer = parts[0]
    head = target.split("/")
    if layer in ("sources", "sinks"):
        if head[0] in ("core", "formats", "clients"):
            return True
        if head[0] != layer:
            return False
        shared = len(head) == 2  # sources/x.h: a helper of the whole layer
        own = len(parts) > 2 and len(head) > 2 and head[1] == parts[1]
        return shared or own
    if layer in ("formats", "wal"):
        return head[0] in ("core", "clients", layer)
    if layer == "clients":
        return head[0] in ("core", "clients")
    if layer == "core":
        return head[0] == "core"
    return True  # core, engine, config, state, cli: the layers above assemble the pieces


def main() -> int:
    problems = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        rel = pathlib.PurePosixPath(path.relative_to(SRC).as_posix())
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            if "/" in target and not allowed(rel, target):
                problems.append(f"src/{rel}: includes \"{target}\", which its layer may not use")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the layering rule (see scripts/check-layering.py); move the shared "
              "piece into src/clients/ or the layer's top folder")
        return 1
    print("layering: every include follows the rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
