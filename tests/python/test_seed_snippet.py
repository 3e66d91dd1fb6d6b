"""The issue's snippet, verbatim, then the CLI runs what it saved in chaos mode until it finishes."""
import signal

from conftest import digest, run_skipprd
import skippr


def test_seed_snippet_saves_a_pipeline_the_cli_runs_under_chaos_exactly_once(example_config, reference_digest):
    from skippr import Config, Pipeline
    cfg = Config.discover()
    src = cfg.get_data_source("sample")
    sink = cfg.get_data_sink("warehouse")
    cfg.pipeline("bikehire", Pipeline(data_source=src, data_sink=sink, chaos_mode=True))
    cfg.save()

    # What was saved is what the CLI reads: chaos on, the rest as in the example.
    saved = skippr.Config.load(example_config)
    assert saved.get_pipeline("bikehire").chaos_mode is True
    assert saved.get_data_source("sample").params == {"rows": 100000, "seed": 1}
    assert run_skipprd(["validate"], example_config.parent).returncode == 0

    # Small batches and segments: each of the five failpoints is passed many times per run, so chaos strikes on a fast
    # idle machine too; the timer bounds a run when the CPU is busy.
    env = {"SKIPPR_CHAOS_MODE": "yes", "SKIPPR_CHAOS_MIN_SECONDS": "0.1", "SKIPPR_CHAOS_MAX_SECONDS": "1.5",
           "BUFFER_THRESHOLD_BYTES": "200000", "WAL_BYTES_PER_FILE": "500000"}
    exit_codes = []
    while not exit_codes or exit_codes[-1] != 0:
        assert len(exit_codes) < 300, f"no clean finish after {len(exit_codes)} runs: {exit_codes[-10:]}"
        r = run_skipprd(["sync", "--pipeline", "bikehire", "--once", "--output", "text"], example_config.parent, env)
        assert r.returncode in (0, -signal.SIGKILL), r.stderr  # subprocess reports a SIGKILL as -9 (a shell: 137)
        exit_codes.append(r.returncode)

    print(f"chaos: {len(exit_codes)} runs, {exit_codes.count(-signal.SIGKILL)} killed")
    assert -signal.SIGKILL in exit_codes, "chaos mode never struck, so this proves nothing"
    rows, distinct_ids, content = digest(example_config.parent / "data" / "bikehire.duckdb")
    assert rows == 100000
    assert distinct_ids == 100000
    assert (rows, distinct_ids, content) == reference_digest(100000)
