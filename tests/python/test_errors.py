"""Wrong types and unknown names: TypeError for a wrong call, skippr.Error (with the CLI's exit code) otherwise."""
import os
import subprocess

import pytest

from conftest import sample_config
import skippr
from skippr import Config, DataSinkDuckDB, DataSinkStdout, DataSourceSample, Pipeline


@pytest.fixture
def cfg(example_config):
    return Config.load(example_config)


def test_unknown_keyword_names_the_valid_ones():
    with pytest.raises(TypeError) as e:
        DataSinkDuckDB(path="x.duckdb", tabel="trips")
    assert "'tabel'" in str(e.value) and "did you mean 'table'" in str(e.value) and "path, table" in str(e.value)
    with pytest.raises(TypeError, match="Stdout takes no parameters"):
        DataSinkStdout(verbose=True)


def test_wrong_value_types_are_type_errors():
    with pytest.raises(TypeError, match="'rows' must be an integer"):
        DataSourceSample(rows="many")
    with pytest.raises(TypeError, match="'rows' must be an integer.*boolean"):
        DataSourceSample(rows=True)
    with pytest.raises(TypeError, match="'table' must be a string"):
        DataSinkDuckDB(path="x.duckdb", table=5)
    with pytest.raises(TypeError, match="cannot be written to skippr.yml"):
        DataSourceSample(rows=object())
    with pytest.raises(TypeError, match="keyword arguments only"):
        DataSourceSample(100)
    with pytest.raises(TypeError, match="missing required parameter 'path'"):
        DataSinkDuckDB(table="trips")
    with pytest.raises(TypeError, match="chaos_mode"):
        Pipeline(data_source="sample", data_sink="warehouse", chaos_mode="yes please")
    with pytest.raises(TypeError, match="expected a DataSource"):
        Pipeline(data_source=DataSinkStdout(), data_sink="warehouse")
    with pytest.raises(TypeError, match="has no name yet"):
        Pipeline(data_source=DataSourceSample(), data_sink="warehouse")
    # A ${VAR} reference fits any type: it is checked once expanded.
    assert DataSourceSample(rows="${ROWS}").params == {"rows": "${ROWS}"}


def test_unknown_names_are_skippr_errors(cfg):
    with pytest.raises(skippr.Error) as e:
        cfg.get_data_source("smaple")
    assert e.value.exit_code == 2 and "it has: sample" in str(e.value)
    with pytest.raises(skippr.Error, match="no pipeline 'nope'.*it has: bikehire"):
        cfg.get_pipeline("nope")
    with pytest.raises(skippr.Error, match="data source 'smaple' is not defined.*did you mean 'sample'"):
        cfg.pipeline("p", Pipeline(data_source="smaple", data_sink="warehouse"))
    with pytest.raises(skippr.Error, match="unknown landing 'upsert'.*merge_by_key"):
        cfg.pipeline("p", Pipeline(data_source="sample", data_sink="warehouse", landing="upsert"))
    with pytest.raises(TypeError, match="expected a DataSink"):
        cfg.data_sink("s", DataSourceSample())
    with pytest.raises(skippr.Error, match="no source type 'Kafkaa'"):
        skippr.DataSource("Kafkaa", {})
    assert "p" not in cfg.pipelines()


def test_files_and_commands_report_like_the_cli(workdir):
    with pytest.raises(skippr.Error, match="not found"):
        Config.load(workdir / "missing.yml")
    with pytest.raises(skippr.Error, match="no skippr.yml"):
        Config.discover()
    (workdir / "skippr.yml").write_text("data_sources:\n  a: [unclosed\n")
    with pytest.raises(skippr.Error, match=r"skippr.yml:\d+:\d+: invalid YAML"):
        Config.discover()
    (workdir / "skippr.yml").write_text(sample_config(10))
    with pytest.raises(skippr.Error) as e:
        skippr.sync("nope")
    assert e.value.exit_code == 2 and "pipeline 'nope' is not in" in str(e.value) and "bikehire" in str(e.value)
    with pytest.raises(skippr.Error, match="expected one of RESET PIPELINE"):
        skippr.query("DROP TABLE trips")
    with pytest.raises(ValueError, match="output"):
        skippr.sync("bikehire", output="xml")


def test_sync_refuses_chaos_mode_in_process(workdir):
    (workdir / "skippr.yml").write_text(sample_config(10, chaos=True))
    with pytest.raises(skippr.Error, match="chaos mode.*SIGKILL.*skipprd sync --pipeline bikehire") as e:
        skippr.sync("bikehire")
    assert e.value.exit_code == 2
    assert not (workdir / "out.duckdb").exists()


def _read_only_folder(path):
    """A folder whose file system refuses writes: a read-only tmpfs as root (who ignores permission bits), a 0500
    folder otherwise. None when neither can be made here."""
    path.mkdir()
    if os.geteuid() != 0:
        return "chmod"
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)]).returncode != 0:
        return None
    return "mount"


def test_save_into_a_read_only_folder_is_a_config_error(tmp_path):
    folder = tmp_path / "ro"
    how = _read_only_folder(folder)
    if how is None:
        pytest.skip("cannot make a read-only folder here")
    try:
        (folder / "skippr.yml").write_text(sample_config(10))
        if how == "mount":
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            folder.chmod(0o500)
        cfg = Config.load(folder / "skippr.yml")
        cfg.data_source("more", DataSourceSample(rows=5))
        with pytest.raises(skippr.Error) as e:
            cfg.save()
        assert e.value.exit_code == 2, str(e.value)
        assert "check its owner and permissions" in str(e.value)
        assert "rows: 10" in (folder / "skippr.yml").read_text()  # untouched
    finally:
        if how == "mount":
            subprocess.run(["umount", str(folder)])
        else:
            folder.chmod(0o700)
