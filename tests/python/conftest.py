"""Shared set-up of the Python tests: the freshly built module from $SKIPPR_BUILD_DIR/python (default: build/),
the real skipprd binary beside it, and a temp folder per test holding a skippr.yml and DATA_DIR."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SKIPPR_BUILD_DIR", REPO / "build")).resolve()
MODULE_DIR = BUILD / "python"
SKIPPRD = BUILD / "skipprd"
sys.path.insert(0, str(MODULE_DIR))

import skippr  # noqa: E402  (needs the path above)

# count, distinct ids and an order-independent hash over every column: equal digests mean the same rows.
DIGEST_SQL = (
    "SELECT count(*) AS rows, count(DISTINCT trip_id) AS distinct_ids, "
    "sum(hash(trip_id, rider_id, bike_id, event_type, event_time, station, duration_s, firmware, metadata)::HUGEINT)"
    " AS hash FROM trips"
)


def sample_config(rows, db="out.duckdb", chaos=False):
    return (
        "data_sources:\n  sample:\n    Sample: { rows: %d, seed: 1 }\n"
        "data_sinks:\n  warehouse:\n    DuckDB: { path: %s, table: trips }\n"
        "pipelines:\n  bikehire:\n    data_source: data_sources.sample\n    data_sink: data_sinks.warehouse\n"
        "    chaos_mode: %s\n" % (rows, db, "true" if chaos else "false")
    )


def digest(db_path):
    row = skippr._duckdb_query(str(db_path), DIGEST_SQL)[0]
    return int(row["rows"]), int(row["distinct_ids"]), row["hash"]


def run_skipprd(args, cwd, env=None, timeout=600):
    full_env = dict(os.environ)
    full_env.pop("SKIPPR_CONFIG_FILE", None)
    full_env["DATA_DIR"] = str(pathlib.Path(cwd) / "data")
    full_env.update(env or {})
    return subprocess.run([str(SKIPPRD), *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A temp folder as the working folder, with DATA_DIR inside it and no SKIPPR_CONFIG_FILE."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SKIPPR_CONFIG_FILE", raising=False)
    monkeypatch.delenv("SKIPPR_CHAOS_MODE", raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture(scope="session")
def reference_digest(tmp_path_factory):
    """digest(rows) of a plain CLI run of the Sample source (seed 1), by row count, computed once per count."""
    cache = {}

    def compute(rows):
        if rows not in cache:
            d = tmp_path_factory.mktemp("reference")
            (d / "skippr.yml").write_text(sample_config(rows))
            r = run_skipprd(["sync", "--pipeline", "bikehire", "--once"], d)
            assert r.returncode == 0, r.stderr
            cache[rows] = digest(d / "out.duckdb")
        return cache[rows]

    return compute


@pytest.fixture
def example_config(workdir):
    """A copy of the repo's example skippr.yml in the working folder."""
    shutil.copy(REPO / "skippr.yml", workdir / "skippr.yml")
    return workdir / "skippr.yml"
