"""Ctrl-C during skippr.sync: the engine stops reading, lands what is committed, KeyboardInterrupt reaches the caller;
a rerun of the CLI then delivers every row exactly once."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import MODULE_DIR, digest, run_skipprd, sample_config

ROWS = 300000
# The child catches KeyboardInterrupt and exits 130 (128 + SIGINT, as a shell reports Ctrl-C).
# A shell's background job inherits SIGINT ignored, and then Python installs no handler of its own: install it.
CHILD = """
import signal, sys, skippr
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    skippr.sync("bikehire", once=True, output="json")
except KeyboardInterrupt:
    print("KeyboardInterrupt raised", flush=True)
    sys.exit(130)
print("finished without interruption", flush=True)
"""


def test_ctrl_c_stops_cleanly_and_a_rerun_delivers_every_row_once(workdir, reference_digest):
    (workdir / "skippr.yml").write_text(sample_config(ROWS))
    env = dict(os.environ, PYTHONPATH=str(MODULE_DIR), DATA_DIR=str(workdir / "data"),
               BUFFER_THRESHOLD_BYTES="100000")  # many small batches: a slow run to interrupt
    child = subprocess.Popen([sys.executable, "-c", CHILD], cwd=workdir, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    events = []
    for line in child.stdout:
        if line.startswith("{"):
            events.append(json.loads(line))
            if events[-1]["event"] == "batch_landed":
                break
    assert any(e["event"] == "batch_landed" for e in events), child.stderr.read()
    interrupted_at = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    stopped_after = time.monotonic() - interrupted_at

    assert child.returncode == 130, (out, err)
    assert "KeyboardInterrupt raised" in out
    assert stopped_after < 15, f"took {stopped_after:.1f}s to stop"
    complete = [json.loads(line) for line in out.splitlines() if '"sync_complete"' in line]
    assert len(complete) == 1, out
    landed_before = complete[0]["rows_landed"]
    assert 0 < landed_before < ROWS, "the run was not interrupted half-way"
    # What the interrupted run reports landed is in the table, exactly once.
    assert digest(workdir / "out.duckdb")[:2] == (landed_before, landed_before)

    r = run_skipprd(["sync", "--pipeline", "bikehire", "--once"], workdir)
    assert r.returncode == 0, r.stderr
    assert digest(workdir / "out.duckdb") == reference_digest(ROWS)
