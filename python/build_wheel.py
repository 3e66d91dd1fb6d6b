"""Packs the built module `skippr` as a wheel, offline: BUILD/python/dist/skippr-<version>-<tag>.whl.

usage: /usr/bin/python3 python/build_wheel.py [--build-dir build] [--out-dir BUILD/python/dist] [--keep-debug-info]

Run it with the Python the module was built for (CMake's PYTHON_EXECUTABLE, Debian's /usr/bin/python3): the wheel's
tag is that interpreter's. `make wheel` builds the module first, then runs this. Standard library only (plus binutils'
strip): no setuptools, no wheel package, no network.

1. Stage what lands in site-packages: the package skippr/ (the extension, python/package/__init__.py re-exporting it,
   the generated stub as __init__.pyi, py.typed) and skippr.libs/libduckdb.so, DuckDB's library from CMake's cache.
2. In the staged copy of the extension: strip the debug info (RelWithDebInfo: 116 of its 122 MB) and set its RUNPATH
   to $ORIGIN/../skippr.libs, where the installed wheel keeps libduckdb.so (auditwheel's layout). The new RUNPATH is
   written over the old one in .dynstr, as chrpath does: no patchelf, and the build tree's module is left as it is.
3. Import the staged package in a fresh interpreter without PYTHONPATH or LD_LIBRARY_PATH: it must load, the
   libduckdb.so it maps must be the staged one, and its __version__ (the project's, from CMake) names the wheel.
4. Write the wheel with zipfile (PEP 427, the binary distribution format): the files, then skippr-<version>.dist-info/
   with METADATA, WHEEL (Root-Is-Purelib: false, the tag) and RECORD (sha256 and size of every file). Entries carry a
   fixed date, so the same build gives the same wheel.
"""
import argparse
import base64
import csv
import hashlib
import importlib.machinery
import io
import json
import os
import pathlib
import shutil
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

NAME = "skippr"
LIBS = NAME + ".libs"
RUNPATH = "$ORIGIN/../" + LIBS
REPO = pathlib.Path(__file__).resolve().parents[1]
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry holds: reproducible wheels

# Run in a fresh interpreter (-I: no PYTHON* variables, no user site, no script folder) with the stage on sys.path.
IMPORT_CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
import skippr
maps = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libduckdb" in line})
print(json.dumps({"version": skippr.__version__, "summary": (skippr.__doc__ or "").strip().splitlines()[0],
                  "file": skippr.__file__, "libduckdb": maps}))
"""


def fail(message):
    sys.exit("build_wheel.py: " + message)


def cmake_cache(build_dir):
    path = build_dir / "CMakeCache.txt"
    if not path.is_file():
        fail(f"{path} not found: configure and build first (make python)")
    cache = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and ":" in key and not line.startswith(("#", "//")):
            cache[key.split(":", 1)[0]] = value
    return cache


def wheel_tag():
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}{sys.abiflags}-{platform}"


# ---- the RUNPATH of an ELF64 little-endian shared object, rewritten in place ----------------------------------------

SHT_DYNAMIC, SHT_DYNSYM, SHT_GNU_VERDEF, SHT_GNU_VERNEED = 6, 11, 0x6FFFFFFD, 0x6FFFFFFE
DT_NULL, DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 14, 15, 29
DT_STRING_TAGS = {DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, 0x7FFFFFFD, 0x7FFFFFFF}  # + DT_AUXILIARY, DT_FILTER


def _sections(elf):
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
    return [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]


def _dynstr_references(elf, sections, dynstr_index):
    """Every offset into .dynstr that something of the file names: dynamic entries, symbols, symbol versions."""
    refs = []
    for _, sh_type, _, _, offset, size, link, info, _, entsize in sections:
        if link != dynstr_index:
            continue
        if sh_type == SHT_DYNAMIC:
            for pos in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", elf, pos)
                if tag == DT_NULL:
                    break
                if tag in DT_STRING_TAGS:
                    refs.append(value)
        elif sh_type == SHT_DYNSYM:
            refs.extend(struct.unpack_from("<I", elf, pos)[0] for pos in range(offset, offset + size, entsize or 24))
        elif sh_type == SHT_GNU_VERNEED:
            pos = offset
            for _ in range(info):
                _, count, file_name, aux, next_entry = struct.unpack_from("<HHIII", elf, pos)
                refs.append(file_name)
                aux_pos = pos + aux
                for _ in range(count):
                    _, _, _, name, next_aux = struct.unpack_from("<IHHII", elf, aux_pos)
                    refs.append(name)
                    aux_pos += next_aux
                pos += next_entry
        elif sh_type == SHT_GNU_VERDEF:
            pos = offset
            for _ in range(info):
                _, _, _, count, _, aux, next_entry = struct.unpack_from("<HHHHIII", elf, pos)
                aux_pos = pos + aux
                for _ in range(count):
                    name, next_aux = struct.unpack_from("<II", elf, aux_pos)
                    refs.append(name)
                    aux_pos += next_aux
                pos += next_entry
    return refs


def set_runpath(path, new_runpath):
    """Writes new_runpath over the file's RUNPATH (or RPATH) string, NUL-padded, like chrpath: it must not be longer
    than the old one. Refuses when another name of the file shares the old string's bytes (the linker merges a name
    that is a suffix of another), since overwriting would change that name too. Returns the old RUNPATH."""
    elf = bytearray(pathlib.Path(path).read_bytes())
    sections = _sections(elf)
    dynamic = [s for s in sections if s[1] == SHT_DYNAMIC]
    if len(dynamic) != 1:
        raise ValueError(f"{path}: {len(dynamic)} dynamic sections")
    _, _, _, _, dyn_offset, dyn_size, dynstr_index, _, _, _ = dynamic[0]
    dynstr_offset, dynstr_size = sections[dynstr_index][4], sections[dynstr_index][5]
    entries = []
    for pos in range(dyn_offset, dyn_offset + dyn_size, 16):
        tag, value = struct.unpack_from("<qQ", elf, pos)
        if tag == DT_NULL:
            break
        if tag in (DT_RPATH, DT_RUNPATH):
            entries.append(value)
    if len(entries) != 1:
        raise ValueError(f"{path}: {len(entries)} RUNPATH/RPATH entries, expected one to rewrite")
    start = entries[0]
    end = elf.index(b"\0", dynstr_offset + start) - dynstr_offset
    old = bytes(elf[dynstr_offset + start:dynstr_offset + end])
    new = new_runpath.encode()
    if len(new) > len(old):
        raise ValueError(f"{path}: the RUNPATH {old.decode()!r} is shorter than {new_runpath!r}")
    refs = _dynstr_references(elf, sections, dynstr_index)
    sharing = [r for r in refs if start < r < end] + [r for r in refs if r == start][1:]  # all but the RUNPATH's own
    if sharing:
        raise ValueError(f"{path}: {len(sharing)} other names share the bytes of the RUNPATH {old.decode()!r}")
    if not 0 <= start < end < dynstr_size:
        raise ValueError(f"{path}: the RUNPATH lies outside .dynstr")
    elf[dynstr_offset + start:dynstr_offset + end] = new + b"\0" * (len(old) - len(new))
    pathlib.Path(path).write_bytes(elf)
    return old.decode()


# ---- staging, checking, packing -------------------------------------------------------------------------------------

def stage(build_dir, cache, into, strip):
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    extension = build_dir / "python" / (NAME + suffix)
    if not extension.is_file():
        built = sorted(p.name for p in (build_dir / "python").glob(NAME + ".*.so"))
        fail(f"{extension} not found ({'built: ' + ', '.join(built) if built else 'build it: make python'}); run "
             f"this script with the Python the module is built for ({cache.get('PYTHON_EXECUTABLE', '/usr/bin/python3')})")
    stub = build_dir / "python" / (NAME + ".pyi")
    duckdb = pathlib.Path(cache.get("DuckDB_LIBRARY", REPO / "third_party" / "duckdb" / "lib" / "libduckdb.so"))
    for needed in (stub, duckdb):
        if not needed.is_file():
            fail(f"{needed} not found: build the module first (make python)")
    package, libs = into / NAME, into / LIBS
    package.mkdir()
    libs.mkdir()
    shutil.copy(REPO / "python" / "package" / "__init__.py", package / "__init__.py")
    shutil.copy(REPO / "python" / "package" / "py.typed", package / "py.typed")
    shutil.copy(stub, package / "__init__.pyi")
    shutil.copy(duckdb, libs / "libduckdb.so")  # follows a symlink: the library's bytes under the name it is NEEDED by
    staged = package / extension.name
    shutil.copy(extension, staged)
    if strip:
        strip_tool = cache.get("CMAKE_STRIP") or shutil.which("strip") or "strip"
        r = subprocess.run([strip_tool, "--strip-debug", str(staged)], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{strip_tool} --strip-debug {staged} failed: {r.stderr}")
    try:
        set_runpath(staged, RUNPATH)
    except ValueError as e:
        fail(str(e))
    for path in (package / "__init__.py", package / "__init__.pyi", package / "py.typed", libs / "libduckdb.so"):
        path.chmod(0o644)
    staged.chmod(0o755)


def check_import(staged):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    r = subprocess.run([sys.executable, "-I", "-B", "-c", IMPORT_CHECK, str(staged)], capture_output=True, text=True,
                       env=env, cwd=staged)
    if r.returncode != 0:
        fail(f"the staged package does not import on its own:\n{r.stderr}")
    found = json.loads(r.stdout)
    if found["file"] != str(staged / NAME / "__init__.py"):
        fail(f"the import check imported {found['file']}, not the staged package")
    if found["libduckdb"] != [str(staged / LIBS / "libduckdb.so")]:
        fail(f"the staged extension mapped libduckdb from {found['libduckdb']}, not from its own {LIBS}/")
    return found


def record_entry(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return arcname, "sha256=" + digest, len(data)


def zip_info(arcname, mode):
    info = zipfile.ZipInfo(arcname, date_time=ZIP_DATE)
    info.external_attr = (stat.S_IFREG | (mode & 0o777)) << 16  # pip keeps the executable bits
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def write_wheel(staged, out_path, version, summary, tag):
    dist_info = f"{NAME}-{version}.dist-info"
    py_version = f"{sys.version_info.major}.{sys.version_info.minor}"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        f"Summary: {summary}\n"
        f"Requires-Python: =={py_version}.*\n"
        "Description-Content-Type: text/markdown\n"
        "\n"
        "The Python module of skipprd: edit skippr.yml, run a pipeline in this process (`skippr.sync`), run control\n"
        "statements (`skippr.query`). See docs/guide/python.md in the skipprd repository.\n"
        "\n"
        f"Built for CPython {py_version} on Debian 12. DuckDB's library is inside the wheel (skippr.libs/); the other\n"
        "libraries skipprd links (yaml-cpp, libcurl, librdkafka, ...) come from the system, as for skipprd itself.\n"
    )
    wheel = ("Wheel-Version: 1.0\n"
             "Generator: skippr (python/build_wheel.py)\n"
             "Root-Is-Purelib: false\n"
             f"Tag: {tag}\n")
    records = []
    tmp_path = out_path.with_name(out_path.name + ".tmp")
    with zipfile.ZipFile(tmp_path, "w", compression=zipfile.ZIP_DEFLATED) as wheel_zip:
        for path in sorted(p for p in staged.rglob("*") if p.is_file()):
            arcname = path.relative_to(staged).as_posix()
            data = path.read_bytes()
            wheel_zip.writestr(zip_info(arcname, path.stat().st_mode), data)
            records.append(record_entry(arcname, data))
        for name, text in (("METADATA", metadata), ("WHEEL", wheel)):  # .dist-info last, as the format recommends
            wheel_zip.writestr(zip_info(f"{dist_info}/{name}", 0o644), text.encode())
            records.append(record_entry(f"{dist_info}/{name}", text.encode()))
        record = io.StringIO()
        writer = csv.writer(record, lineterminator="\n")
        writer.writerows(records)
        writer.writerow((f"{dist_info}/RECORD", "", ""))
        wheel_zip.writestr(zip_info(f"{dist_info}/RECORD", 0o644), record.getvalue().encode())
    os.replace(tmp_path, out_path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=REPO / "build", type=pathlib.Path)
    parser.add_argument("--out-dir", type=pathlib.Path, help="default: BUILD/python/dist")
    parser.add_argument("--keep-debug-info", action="store_true", help="do not strip the extension's debug info")
    args = parser.parse_args(argv)
    build_dir = args.build_dir.resolve()
    out_dir = (args.out_dir or build_dir / "python" / "dist").resolve()
    cache = cmake_cache(build_dir)
    with tempfile.TemporaryDirectory(prefix="skippr-wheel-") as tmp:
        staged = pathlib.Path(tmp)
        stage(build_dir, cache, staged, strip=not args.keep_debug_info)
        found = check_import(staged)
        version = found["version"]
        if cache.get("CMAKE_PROJECT_VERSION", version) != version:
            fail(f"the built module is version {version}, the project {cache['CMAKE_PROJECT_VERSION']}: rebuild it "
                 "(make python)")
        out_dir.mkdir(parents=True, exist_ok=True)
        out_path = out_dir / f"{NAME}-{version}-{wheel_tag()}.whl"
        write_wheel(staged, out_path, version, found["summary"], wheel_tag())
    print(out_path)
    return out_path


if __name__ == "__main__":
    main()
