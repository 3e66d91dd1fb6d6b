#!/usr/bin/env python3
"""The include rule of src/: which folder may use which. Prints every include that breaks it and exits 1 if any does.

  core/                 only itself
  clients/<name>/       core/ and other clients (shared clients live here, never inside a connector)
  formats/              core/, clients/
  wal/                  core/, clients/; wal/clustered/ (the replica server) also config/ and state/
  state/                core/, clients/, wal/
  config/               core/
  sinks/kit/            the sink kit: core/, formats/, clients/
  sources/<name>/,      a connector: its own folder, core/, formats/, clients/ (and sinks the sink kit) -- never
  sinks/<name>/         another connector's folder, the engine, serve, the config or the WAL
  engine/               what is below it, not serve/ (but serve/metrics.h, which a run reports into) nor cli/
  serve/                what is below it, not cli/
  cli/                  everything but a connector's folder: connectors join through the generated registry
No one outside a connector's folder includes it: the registry is generated from the connectors' declarations.
"""
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

BELOW = {
    "core": {"core"},
    "clients": {"core", "clients"},
    "formats": {"core", "clients", "formats"},
    "wal": {"core", "clients", "wal"},
    "state": {"core", "clients", "state", "wal"},
    "config": {"core", "config"},
}
ASSEMBLING = {  # the layers above: what they may not include
    "engine": {"serve", "cli"},
    "serve": {"cli"},
    "cli": set(),
}
ENGINE_MAY_USE = {"serve/metrics.h"}


def allowed(rel: pathlib.PurePosixPath, target: str) -> bool:
    parts = rel.parts
    layer = parts[0]
    head = target.split("/")
    if head[0] in ("sources", "sinks") and not (head[0] == "sinks" and head[1] == "kit"):
        # a connector's folder: only itself
        return len(parts) > 2 and parts[0] == head[0] and parts[1] == head[1]
    if layer in ("sources", "sinks"):  # a connector, or the sink kit (its own folder is the kit)
        return head[0] in ("core", "formats", "clients") or (layer == "sinks" and head[:2] == ["sinks", "kit"])
    if layer == "wal" and len(parts) > 2 and parts[1] == "clustered":
        return head[0] in BELOW["wal"] | {"config", "state"}
    if layer in BELOW:
        return head[0] in BELOW[layer]
    if layer in ASSEMBLING:
        if layer == "engine" and target in ENGINE_MAY_USE:
            return True
        return head[0] not in ASSEMBLING[layer]
    return False  # a folder the rule does not know: add it above


def main() -> int:
    problems = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        rel = pathlib.PurePosixPath(path.relative_to(SRC).as_posix())
        if rel.parts[0] not in BELOW and rel.parts[0] not in ASSEMBLING and rel.parts[0] not in ("sources", "sinks"):
            problems.append(f"src/{rel}: its folder has no place in the layering rule (scripts/check-layering.py)")
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            if "/" in target and not allowed(rel, target):
                problems.append(f"src/{rel}: includes \"{target}\", which its layer may not use")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the layering rule (see scripts/check-layering.py); move the shared "
              "piece into src/clients/, src/sinks/kit/ or the layer below")
        return 1
    print("layering: every include follows the rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
