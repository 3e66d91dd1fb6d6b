"""The wheel: python/build_wheel.py packs the built module, pip installs it offline into a fresh venv, where it works on
its own (no PYTHONPATH, no LD_LIBRARY_PATH, DuckDB's library from the wheel, the working folder outside the repo), and
pip uninstalls every file it installed."""
import base64
import csv
import hashlib
import io
import json
import os
import pathlib
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from conftest import BUILD, MODULE_DIR, REPO, SKIPPRD, digest, sample_config
import skippr

ROWS = 2000
PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
EXTENSION = f"skippr/{pathlib.Path(skippr.__file__).name}"  # skippr.cpython-311-x86_64-linux-gnu.so, as built
PACKAGE_FILES = {"skippr/__init__.py", "skippr/__init__.pyi", "skippr/py.typed", EXTENSION, "skippr.libs/libduckdb.so"}

# Runs in the venv's Python: the documented API, then what the process actually loaded.
IN_VENV = """
import json, os, sys
import skippr
from skippr import Config, DataSourceSample
stats = skippr.sync("bikehire", config="skippr.yml")
try:
    skippr.sync("no_such_pipeline", config=Config.load("skippr.yml"))
    error = None
except skippr.Error as e:
    error = e.exit_code
print(json.dumps({
    "file": skippr.__file__,
    "version": skippr.__version__,
    "names": sorted(n for n in dir(skippr) if not (n.startswith("__") and n.endswith("__"))),
    "stats": stats,
    "error": error,
    "sample_rows": DataSourceSample(rows=5).params,
    "shown": skippr.query("SHOW STATS FOR bikehire"),
    "rows": skippr._duckdb_query("out.duckdb", "SELECT count(*) AS n FROM trips"),
    "libduckdb": sorted({line.split()[-1] for line in open("/proc/self/maps") if "libduckdb" in line}),
    "sys_path": sys.path,
    "environ": sorted(os.environ),
}, default=str))
"""


def project_version():
    """`skipprd --version` of the same build: the version the wheel must carry."""
    out = subprocess.run([str(SKIPPRD), "--version"], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "skipprd", out
    return out[1]


def clean_env(home, **extra):
    """No PYTHONPATH, no LD_LIBRARY_PATH, no pip configuration of this machine: only what a new shell has."""
    home.mkdir(exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PIP_CONFIG_FILE": os.devnull, **extra}


def run(cmd, **kwargs):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    r = run([sys.executable, REPO / "python" / "build_wheel.py", "--build-dir", BUILD, "--out-dir", out])
    assert r.returncode == 0, r.stderr
    wheels = sorted(out.glob("*.whl"))
    assert [str(w) for w in wheels] == [r.stdout.strip()]
    return wheels[0]


def test_the_wheel_holds_the_package_duckdbs_library_and_a_record_of_every_file(wheel, tmp_path):
    version = project_version()
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert wheel.name == f"skippr-{version}-{PY}-{PY}-{platform}.whl"
    assert skippr.__version__ == version
    dist_info = f"skippr-{version}.dist-info"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert sorted(names) == sorted(PACKAGE_FILES | {f"{dist_info}/{n}" for n in ("METADATA", "WHEEL", "RECORD")})
        assert names[-3:] == [f"{dist_info}/METADATA", f"{dist_info}/WHEEL", f"{dist_info}/RECORD"]

        wheel_file = dict(line.split(": ", 1) for line in z.read(f"{dist_info}/WHEEL").decode().splitlines())
        assert wheel_file == {"Wheel-Version": "1.0", "Generator": "skippr (python/build_wheel.py)",
                              "Root-Is-Purelib": "false", "Tag": f"{PY}-{PY}-{platform}"}
        metadata = z.read(f"{dist_info}/METADATA").decode().split("\n\n", 1)[0]
        fields = dict(line.split(": ", 1) for line in metadata.splitlines())
        assert (fields["Metadata-Version"], fields["Name"], fields["Version"]) == ("2.1", "skippr", version)
        assert fields["Requires-Python"] == f"=={sys.version_info.major}.{sys.version_info.minor}.*"

        # RECORD: every other file once, with its urlsafe-base64 sha256 (no padding) and size; RECORD itself bare.
        record = list(csv.reader(io.StringIO(z.read(f"{dist_info}/RECORD").decode())))
        assert sorted(row[0] for row in record) == sorted(names)
        for path, hash_, size in record:
            if path == f"{dist_info}/RECORD":
                assert (hash_, size) == ("", "")
                continue
            data = z.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (hash_, int(size)) == ("sha256=" + expected, len(data)), path

        assert z.read("skippr/__init__.pyi") == (MODULE_DIR / "skippr.pyi").read_bytes()
        assert z.read("skippr.libs/libduckdb.so")[:4] == b"\x7fELF"
        assert (z.getinfo(EXTENSION).external_attr >> 16) & 0o111, "the extension is not executable"
        (tmp_path / "ext.so").write_bytes(z.read(EXTENSION))

    # The copy finds DuckDB beside it, and only there; the build tree's module keeps its own path.
    dynamic = run(["readelf", "-d", tmp_path / "ext.so"]).stdout
    assert "Library runpath: [$ORIGIN/../skippr.libs]" in dynamic, dynamic
    assert "Library rpath:" not in dynamic and "Shared library: [libduckdb.so]" in dynamic
    assert str(REPO) not in dynamic
    assert "Library runpath: [$ORIGIN" not in run(["readelf", "-d", skippr.__file__]).stdout
    assert ".debug_info" not in run(["readelf", "-S", "-W", tmp_path / "ext.so"]).stdout, "debug info not stripped"


def test_pip_installs_the_wheel_offline_and_skippr_works_on_its_own_then_uninstalls_cleanly(wheel, tmp_path,
                                                                                             reference_digest):
    version = project_version()
    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", venv], env=clean_env(tmp_path / "home"))
    assert r.returncode == 0, r.stderr
    python = venv / "bin" / "python"
    pip_env = clean_env(tmp_path / "home", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    r = run([python, "-m", "pip", "install", "--no-index", wheel], env=pip_env)
    assert r.returncode == 0, r.stdout + r.stderr
    site = pathlib.Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                            env=pip_env).stdout.strip())
    assert site.is_relative_to(venv) and (site / "skippr" / "py.typed").is_file()

    # A sync in a fresh process of the venv, from a folder outside the repo, with a new shell's environment.
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "skippr.yml").write_text(sample_config(ROWS))
    r = run([python, "-c", IN_VENV], cwd=work, env=clean_env(tmp_path / "home", DATA_DIR=str(work / "data")))
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout)
    assert seen["file"] == str(site / "skippr" / "__init__.py")
    assert seen["libduckdb"] == [str(site / "skippr.libs" / "libduckdb.so")]
    assert not any(str(MODULE_DIR) in p or str(REPO) in p for p in seen["sys_path"]), seen["sys_path"]
    assert not {"PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD"} & set(seen["environ"])
    assert seen["version"] == version
    # The same names as the module of build/python (what PYTHONPATH=build/python gives).
    assert seen["names"] == sorted(n for n in dir(skippr) if not (n.startswith("__") and n.endswith("__")))
    assert seen["stats"]["exit_code"] == 0 and seen["stats"]["rows_landed"] == ROWS
    assert seen["error"] == 2 and seen["sample_rows"] == {"rows": 5}
    assert isinstance(seen["shown"], list) and seen["shown"]
    assert seen["rows"] == [{"n": str(ROWS)}]
    # Read back by the build tree's module: the same rows a CLI run of the same configuration lands.
    assert digest(work / "out.duckdb") == reference_digest(ROWS)

    # pip's view of it.
    r = run([python, "-m", "pip", "show", "-f", "skippr"], env=pip_env)
    assert r.returncode == 0, r.stderr
    head, files = r.stdout.split("Files:\n", 1)
    shown = dict(line.split(":", 1) for line in head.splitlines())
    shown = {k.strip(): v.strip() for k, v in shown.items()}
    summary = skippr.__doc__.strip().splitlines()[0]
    assert (shown["Name"], shown["Version"], shown["Summary"]) == ("skippr", version, summary)
    assert pathlib.Path(shown["Location"]) == site
    installed = {line.strip() for line in files.splitlines() if line.strip()}
    assert PACKAGE_FILES <= installed, installed
    installed_paths = [site / f for f in installed]
    assert all(p.exists() for p in installed_paths)

    r = run([python, "-m", "pip", "uninstall", "-y", "skippr"], env=pip_env)
    assert r.returncode == 0, r.stderr
    assert [p for p in installed_paths if p.exists()] == []
    assert sorted(p.name for p in site.iterdir() if p.name.startswith("skippr")) == []
    r = run([python, "-c", "import skippr"], cwd=work, env=clean_env(tmp_path / "home"))
    assert r.returncode != 0 and "No module named 'skippr'" in r.stderr
