#!/usr/bin/env python3
"""Checks that every connector and client declares itself truthfully (cmake/SkipprConnectors.cmake).

  check-connectors.py [--binary build/skipprd]    the declarations against the code, the docs, the tests and
                                                   (with --binary) the registry the build made from them
  check-connectors.py --configure BUILD_DIR        configures a build with some connectors off in BUILD_DIR and checks
                                                   that neither they nor the clients and libraries only they use are
                                                   compiled or linked

A declaration that forgets a client its code includes would compile in the full build and break the first build that
leaves another connector out; this is where that is caught. Prints each problem and exits 1 when there is one.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
CALL = re.compile(r"^(skippr_connector|skippr_client)\((\w+)\s*$")
CLIENT_INCLUDE = re.compile(r'^\s*#\s*include\s+"clients/(\w+)/', re.M)
KEYWORDS = {"KIND", "SPEC", "HEADER", "DOC", "CLIENTS", "PKG_CONFIG", "DEBIAN", "TEST_DEBIAN", "TESTS", "CORE", "USES"}


def parse(path: pathlib.Path):
    """The calls of a declaration file: (function, name, {KEYWORD: [values]}). One keyword per line is the format
    scripts/install-deps.sh relies on, so anything else is reported."""
    calls, problems, current = [], [], None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path.relative_to(ROOT)}:{number}"
        if current is None:
            m = CALL.match(line)
            if not m:
                problems.append(f"{where}: expected 'skippr_connector(<Type>' or 'skippr_client(<name>' on a line")
                continue
            current = (m.group(1), m.group(2), {})
            continue
        if line == ")":
            calls.append(current)
            current = None
            continue
        words = line.split()
        if words[0] not in KEYWORDS or ")" in line:
            problems.append(f"{where}: one KEYWORD and its values per line, ')' alone on the last line")
            continue
        current[2][words[0]] = words[1:]
    if current is not None:
        problems.append(f"{path.relative_to(ROOT)}: a call is not closed")
    return calls, problems


def client_includes(folder: pathlib.Path) -> set:
    found = set()
    for f in folder.rglob("*"):
        if f.suffix in (".h", ".cc"):
            found.update(CLIENT_INCLUDE.findall(f.read_text(errors="replace")))
    return found


def check_declarations(binary):
    problems, connectors, clients = [], [], {}
    for folder in sorted(SRC.glob("clients/*/")):
        decl = folder / "client.cmake"
        if not decl.exists():
            problems.append(f"src/clients/{folder.name}/: no client.cmake declares it")
            continue
        calls, p = parse(decl)
        problems += p
        for fn, name, keys in calls:
            if fn != "skippr_client" or name != folder.name:
                problems.append(f"{decl.relative_to(ROOT)}: declares {fn}({name}), expected skippr_client({folder.name})")
            clients[name] = keys
    for layer in ("sources", "sinks"):
        for folder in sorted((SRC / layer).glob("*/")):
            if layer == "sinks" and folder.name == "kit":
                continue  # the sink kit: shared by the sinks, not a connector
            decl = folder / "connector.cmake"
            if not decl.exists():
                problems.append(f"src/{layer}/{folder.name}/: no connector.cmake declares it")
                continue
            calls, p = parse(decl)
            problems += p
            for fn, name, keys in calls:
                connectors.append((decl, folder, fn, name, keys))

    def closure(names):
        seen, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n in seen or n not in clients:
                continue
            seen.add(n)
            todo += clients[n].get("USES", [])
        return seen

    for name, keys in clients.items():
        for used in keys.get("USES", []):
            if used not in clients:
                problems.append(f"src/clients/{name}/client.cmake: USES {used}, which is not a client")
        missing = client_includes(SRC / "clients" / name) - closure([name])
        for m in sorted(missing):
            problems.append(f"src/clients/{name}/: includes clients/{m}/ but client.cmake does not list it in USES")

    declared = set()
    for decl, folder, fn, name, keys in connectors:
        where = decl.relative_to(ROOT)
        if fn != "skippr_connector":
            problems.append(f"{where}: declares {fn}({name}); a connector folder declares skippr_connector()")
            continue
        kind = (keys.get("KIND") or [""])[0]
        declared.add((kind, name))
        spec = (keys.get("SPEC") or [""])[0]
        header = SRC / (keys.get("HEADER") or [""])[0]
        if not header.is_file():
            problems.append(f"{where}: HEADER {header.relative_to(SRC)} does not exist")
        elif not re.search(rf"\bConnectorSpec\s+{re.escape(spec)}\s*\(\s*\)", header.read_text()):
            problems.append(f"{where}: {header.relative_to(SRC)} does not declare ConnectorSpec {spec}()")
        if folder not in header.parents:
            problems.append(f"{where}: HEADER lies outside the connector's folder")
        doc = ROOT / (keys.get("DOC") or [f"docs/connectors/{name}.md"])[0]
        if not doc.is_file():
            problems.append(f"{where}: its page {doc.relative_to(ROOT)} does not exist")
        tests = keys.get("TESTS", [])
        if not tests:
            problems.append(f"{where}: no TESTS: say where its tests are")
        for t in tests:
            if not (ROOT / t).is_dir():
                problems.append(f"{where}: TESTS {t} is not a folder")
        for c in keys.get("CLIENTS", []):
            if c not in clients:
                problems.append(f"{where}: CLIENTS {c}, which is not a client")
    # A folder with several connectors (DuckDB and MotherDuck) compiles when any is on, so each must declare what
    # the whole folder includes.
    for decl, folder, fn, name, keys in connectors:
        missing = client_includes(folder) - closure(keys.get("CLIENTS", []))
        for m in sorted(missing):
            problems.append(f"{decl.relative_to(ROOT)}: {name}'s folder includes clients/{m}/ but CLIENTS does not "
                            f"list it (a build without the connectors that do would not compile)")

    if binary:
        out = subprocess.run([binary, "connectors"], capture_output=True, text=True, check=True)
        # The table: a header, a rule, then one line per connector starting with its kind and type.
        registered = {tuple(line.split()[:2]) for line in out.stdout.splitlines()[2:] if line.strip()}
        for kind, name in sorted(declared - registered):
            problems.append(f"{kind} {name} is declared but {binary} does not register it")
        for kind, name in sorted(registered - declared):
            problems.append(f"{kind} {name} is registered by {binary} but no connector.cmake declares it")
    return problems, len(connectors), len(clients)


# Off in the --configure check: each is the only user of a library the rest of the build does not link.
SLIM_OFF = {"SKIPPR_SINK_AMQP": ("sinks/amqp", "amqp", "librabbitmq"),
            "SKIPPR_SINK_SYNAPSE": ("sinks/synapse", "odbc", "odbc"),
            "SKIPPR_SOURCE_KAFKA": ("sources/kafka", None, "rdkafka")}


def check_configure(build_dir: pathlib.Path):
    problems = []
    args = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja"] + [f"-D{o}=OFF" for o in SLIM_OFF]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        return [f"configuring with {', '.join(SLIM_OFF)} off failed:\n{run.stdout}{run.stderr}"]
    manifest = (build_dir / "generated" / "connectors.txt").read_text().splitlines()
    registry = (build_dir / "generated" / "connector_registry.cc").read_text()
    compiled = ""
    for f in sorted(build_dir.glob("CMakeFiles/skippr.dir/Unity/*.cxx")):
        compiled += f.read_text()
    compiled += json.dumps([e["file"] for e in json.loads((build_dir / "compile_commands.json").read_text())])
    for option, (folder, client, module) in SLIM_OFF.items():
        if f"src/{folder}/" in compiled:
            problems.append(f"{option}=OFF still compiles src/{folder}/")
        if f'"{folder}/' in registry:
            problems.append(f"{option}=OFF: the registry still includes {folder}")
        if client and f"client {client} ON" in manifest:
            problems.append(f"{option}=OFF: client {client}, which only it uses, is still compiled")
        if f"pkg-config {module}" in manifest:
            problems.append(f"{option}=OFF: {module}, which only it links, is still required")
    for kept in ("connector source_Sample ON", "connector sink_DuckDB ON", "client aws ON"):
        if not any(line == kept or line.startswith(kept + " ") for line in manifest):
            problems.append(f"with {', '.join(SLIM_OFF)} off, the manifest lacks '{kept}'")
    if "sample_source_spec()" not in registry:
        problems.append("the slim registry lost the Sample source")
    if "Some connectors are off" not in run.stdout:
        problems.append("a build with connectors off should say it builds skipprd only (the tests need them all)")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary")
    parser.add_argument("--configure", type=pathlib.Path)
    args = parser.parse_args()
    if args.configure:
        problems = check_configure(args.configure)
        summary = f"a build with {', '.join(SLIM_OFF)} off compiles and links none of them"
    else:
        problems, n_connectors, n_clients = check_declarations(args.binary)
        summary = f"{n_connectors} connector and {n_clients} client declarations match the code, docs and tests"
    for p in problems:
        print(p)
    if problems:
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
