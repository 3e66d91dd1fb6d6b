"""Config load / edit / save: ${VAR} stays a reference, the CLI reads the result, nothing is written on a problem."""
import pytest

from conftest import run_skipprd
import skippr
from skippr import Config, DataSinkDuckDB, DataSourceSample, Pipeline

CONFIG_WITH_REFERENCES = """\
# Warehouse feed, owned by the data team.
# Secrets come from .env.

data_sources:
  sample:
    Sample: { rows: "${PYTEST_SAMPLE_ROWS:-500}", seed: 7 }  # a comment yaml-cpp drops
data_sinks:
  warehouse:
    DuckDB: { path: data/out.duckdb, table: "${PYTEST_SECRET_TABLE}" }
pipelines:
  feed:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: append
    primary_key: [trip_id]
"""


@pytest.fixture
def referencing_config(workdir):
    (workdir / "skippr.yml").write_text(CONFIG_WITH_REFERENCES)
    (workdir / ".env").write_text("PYTEST_SECRET_TABLE=top_secret_table_name\n")
    return workdir / "skippr.yml"


def everything(cfg):
    return ({n: cfg.get_data_source(n) for n in cfg.data_sources()},
            {n: cfg.get_data_sink(n) for n in cfg.data_sinks()}, cfg.pipelines())


def test_references_survive_load_edit_save_reload(referencing_config):
    cfg = Config.load(referencing_config)
    assert cfg.get_data_sink("warehouse").params == {"path": "data/out.duckdb", "table": "${PYTEST_SECRET_TABLE}"}
    assert cfg.get_data_source("sample").params == {"rows": "${PYTEST_SAMPLE_ROWS:-500}", "seed": 7}
    before = everything(cfg)

    cfg.save()  # unchanged
    reloaded = Config.load(referencing_config)
    assert everything(reloaded) == before

    reloaded.data_sink("copy", DataSinkDuckDB(path="data/copy.duckdb", table="${PYTEST_SECRET_TABLE}"))
    reloaded.pipeline("copy", Pipeline(data_source="sample", data_sink="copy", landing="append"))
    reloaded.save()

    text = referencing_config.read_text()
    assert text.count("${PYTEST_SECRET_TABLE}") == 2
    assert "top_secret_table_name" not in text
    assert "${PYTEST_SAMPLE_ROWS:-500}" in text
    assert text.startswith("# Warehouse feed, owned by the data team.\n# Secrets come from .env.\n")
    final = Config.load(referencing_config)
    sources, sinks, pipelines = everything(final)
    assert (sources, pipelines["feed"]) == (before[0], before[2]["feed"])
    assert sinks["warehouse"] == before[1]["warehouse"]
    assert pipelines["copy"] == Pipeline(data_source="sample", data_sink="copy", landing="append")
    assert list(pipelines) == ["feed", "copy"]
    # The CLI accepts what Python wrote.
    r = run_skipprd(["validate"], referencing_config.parent)
    assert r.returncode == 0, r.stderr
    assert "1 source, 2 sinks, 2 pipelines" in r.stdout


def test_typed_classes_write_typed_values(workdir):
    (workdir / "skippr.yml").write_text("data_sources: {}\ndata_sinks: {}\npipelines: {}\n")
    cfg = Config.discover()
    src = cfg.data_source("gen", DataSourceSample(rows=1234, seed=9, start_at="2024-05-01T00:00:00Z"))
    assert src.name == "gen"
    cfg.data_sink("db", DataSinkDuckDB(path=workdir / "x.duckdb", table="t"))
    cfg.pipeline("p", Pipeline(data_source=src, data_sink=cfg.get_data_sink("db"), primary_key="trip_id"))
    cfg.save()
    again = Config.discover()
    assert again.get_data_source("gen").params == {"rows": 1234, "seed": 9, "start_at": "2024-05-01T00:00:00Z"}
    assert again.get_data_sink("db").params == {"path": str(workdir / "x.duckdb"), "table": "t"}
    assert again.get_pipeline("p").primary_key == ["trip_id"]
    assert run_skipprd(["validate"], workdir).returncode == 0


def test_an_invalid_result_is_not_saved(referencing_config, monkeypatch):
    before = referencing_config.read_text()
    cfg = Config.load(referencing_config)
    cfg.data_sink("other", DataSinkDuckDB(path="o.duckdb", table="${PYTEST_NEVER_SET_VARIABLE}"))
    with pytest.raises(skippr.Error) as e:
        cfg.save()
    assert e.value.exit_code == 2
    assert "PYTEST_NEVER_SET_VARIABLE" in str(e.value)
    assert "unchanged" in str(e.value)
    assert referencing_config.read_text() == before


def test_partition_by_is_written_and_read_back(workdir):
    (workdir / "skippr.yml").write_text("data_sources: {}\ndata_sinks: {}\npipelines: {}\n")
    cfg = Config.discover()
    src = cfg.data_source("gen", DataSourceSample(rows=10, seed=1))
    cfg.data_sink("db", DataSinkDuckDB(path=workdir / "x.duckdb", table="t"))
    cfg.pipeline("p", Pipeline(data_source=src, data_sink="db", landing="replace_partition", partition_by="station"))
    cfg.save()
    again = Config.discover().get_pipeline("p")
    assert again.partition_by == ["station"]
    assert again.landing == "replace_partition"
    assert "partition_by=['station']" in repr(again)
    assert run_skipprd(["validate"], workdir).returncode == 0
    # Without it the file is refused before it is written.
    cfg.pipeline("q", Pipeline(data_source=src, data_sink="db", landing="replace_partition"))
    with pytest.raises(skippr.Error) as e:
        cfg.save()
    assert "partition_by" in str(e.value)


def test_allow_empty_replace_is_written_read_back_and_kept(workdir):
    # The key a replace_table pipeline needs to let an empty sync empty its table: Python writes it, reads it back,
    # and re-setting another pipeline keeps it (a dropped key would refuse every empty sync again).
    (workdir / "skippr.yml").write_text("data_sources: {}\ndata_sinks: {}\npipelines: {}\n")
    cfg = Config.discover()
    src = cfg.data_source("gen", DataSourceSample(rows=10, seed=1))
    cfg.data_sink("db", DataSinkDuckDB(path=workdir / "x.duckdb", table="t"))
    cfg.pipeline("p", Pipeline(data_source=src, data_sink="db", landing="replace_table", allow_empty_replace=True))
    cfg.save()
    assert "allow_empty_replace: true" in (workdir / "skippr.yml").read_text()
    again = Config.discover()
    assert again.get_pipeline("p").allow_empty_replace is True
    assert "allow_empty_replace=True" in repr(again.get_pipeline("p"))
    again.pipeline("q", Pipeline(data_source=src, data_sink="db"))
    again.save()
    assert Config.discover().get_pipeline("p").allow_empty_replace is True
    assert run_skipprd(["validate"], workdir).returncode == 0
    with pytest.raises(TypeError):
        Pipeline(data_source=src, data_sink="db", allow_empty_replace="yes please")
    # With another landing the key means nothing: the file is refused before it is written.
    again.pipeline("r", Pipeline(data_source=src, data_sink="db", landing="append", allow_empty_replace=True))
    with pytest.raises(skippr.Error) as e:
        again.save()
    assert "allow_empty_replace" in str(e.value)


def test_save_through_a_symlink_replaces_the_file_it_names_and_keeps_its_permissions(workdir):
    # A skippr.yml kept elsewhere (a dotfiles repo, a mounted secret) and linked here, readable by its owner only.
    # Before, save() replaced the link with a new file, readable by everyone (0644).
    kept = workdir / "private" / "real.yml"
    kept.parent.mkdir()
    kept.write_text("data_sources: {}\ndata_sinks: {}\npipelines: {}\n")
    kept.chmod(0o600)
    link = workdir / "skippr.yml"
    link.symlink_to(kept)
    cfg = Config.load(link)
    cfg.data_sink("db", DataSinkDuckDB(path=workdir / "x.duckdb", table="t"))
    cfg.save()
    assert link.is_symlink()
    assert "DuckDB" in kept.read_text()
    assert (kept.stat().st_mode & 0o777) == 0o600
    assert not (workdir / "private" / "real.yml.tmp").exists()
