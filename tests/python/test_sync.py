"""skippr.sync runs the engine in-process: the same rows as the CLI, the run's statistics, the control language."""
from conftest import digest, run_skipprd, sample_config
import skippr

ROWS = 30000


def test_python_sync_lands_the_same_rows_as_the_cli(workdir, monkeypatch):
    cli_dir, py_dir = workdir / "cli", workdir / "py"
    for d in (cli_dir, py_dir):
        d.mkdir()
        (d / "skippr.yml").write_text(sample_config(ROWS))
    monkeypatch.setenv("BUFFER_THRESHOLD_BYTES", "500000")
    r = run_skipprd(["sync", "--pipeline", "bikehire", "--once"], cli_dir)
    assert r.returncode == 0, r.stderr

    monkeypatch.setenv("DATA_DIR", str(py_dir / "data"))
    stats = skippr.sync("bikehire", config=py_dir / "skippr.yml")
    assert stats["exit_code"] == 0
    assert stats["rows_read"] == stats["rows_committed"] == stats["rows_landed"] == ROWS
    assert stats["batches_landed"] > 1 and stats["batches_waiting"] == 0 and stats["batches_replayed"] == 0
    assert stats["rows_per_second"] > 0
    # The full BatchId: pipeline/lineage (32 hex digits)/epoch/seq.
    pipeline, lineage, epoch, seq = stats["last_batch_landed"].split("/")
    assert (pipeline, len(lineage), epoch) == ("bikehire", 32, "1") and int(seq) == stats["batches_landed"]

    assert digest(py_dir / "out.duckdb") == digest(cli_dir / "out.duckdb")
    assert digest(py_dir / "out.duckdb")[:2] == (ROWS, ROWS)

    # The control language sees the run; a second sync reads nothing new and lands nothing twice.
    shown = skippr.query("SHOW STATS FOR bikehire", config=str(py_dir / "skippr.yml"))
    assert isinstance(shown, list) and shown
    again = skippr.sync("bikehire", once=True, config=skippr.Config.load(py_dir / "skippr.yml"))
    assert again["rows_read"] == 0 and again["rows_landed"] == 0
    assert digest(py_dir / "out.duckdb") == digest(cli_dir / "out.duckdb")


def test_query_changes_state_and_returns_its_message(workdir):
    (workdir / "skippr.yml").write_text(sample_config(10))
    message = skippr.query("DISABLE PIPELINE bikehire")
    assert message == "pipeline 'bikehire' disabled"
    listed = skippr.query("SHOW PIPELINES")
    assert [(p["pipeline"], p["enabled"]) for p in listed] == [("bikehire", "no")]
    try:
        skippr.sync("bikehire")
    except skippr.Error as e:
        assert e.exit_code == 2 and "ENABLE PIPELINE bikehire" in str(e)
    else:
        raise AssertionError("a disabled pipeline ran")
    assert skippr.query("enable pipeline bikehire;") == "pipeline 'bikehire' enabled"
    assert skippr.sync("bikehire")["rows_landed"] == 10
