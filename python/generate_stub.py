"""Writes skippr.pyi: the template plus one class per connector of the freshly built module.

usage: PYTHONPATH=build/python python3 generate_stub.py skippr.pyi.in build/python/skippr.pyi
"""
import sys

import skippr

MARKER = "# @CONNECTOR_CLASSES@"


def connector_class(spec):
    base = "DataSource" if spec["kind"] == "source" else "DataSink"
    params = "".join(
        f", {p['name']}: {p['python_type']}" + ("" if p['python_type'].startswith('str') else " | str") + ("" if p["required"] else " = ...") for p in spec["params"]
    )
    star = ", *" if spec["params"] else ""
    return (
        f"class {spec['class_name']}({base}):\n"
        f"    \"\"\"{spec['summary']}. Any parameter may be a \"${{VAR}}\" reference.\"\"\"\n"
        f"    def __init__(self{star}{params}) -> None: ...\n"
    )


def main(template_path, out_path):
    with open(template_path) as f:
        template = f.read()
    classes = "\n".join(connector_class(spec) for spec in skippr.connectors())
    with open(out_path, "w") as f:
        f.write(template.replace(MARKER, classes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
