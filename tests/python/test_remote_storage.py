"""skippr.sync and skippr.query on WAL_STORAGE=s3 + SKIPPR_STATE_STORE=dynamodb (moto_server): the same rows as the
CLI, and the state lives in DynamoDB, not in DATA_DIR."""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import digest, run_skipprd, sample_config
import skippr

ROWS = 20000


def _program(name):
    found = shutil.which(name) or shutil.which(name, path=str(pathlib.Path.home() / ".pyenv" / "shims"))
    if not found:
        pytest.fail(f"{name} is not installed (make deps installs it)")
    return found


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    """moto_server on a free loopback port, and an AWS environment pointing at it with a fresh bucket."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    server = subprocess.Popen([_program("moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log.open("w"), stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    urllib.request.urlopen(urllib.request.Request(endpoint + "/pywal", method="PUT"), timeout=10)
    # skipprd talks to moto through the gate, which checks every Signature V4 as AWS does and makes DynamoDB's
    # conditional writes atomic (tests/support/aws_gate.py); the bucket above was made unsigned, directly.
    port_file = tmp_path_factory.mktemp("gate") / "port"
    gate_script = pathlib.Path(__file__).resolve().parents[1] / "support" / "aws_gate.py"
    # The image's python3 beside moto (pyenv's), whose botocore signs; the tests themselves run on Debian's.
    gate = subprocess.Popen([_program("python3"), str(gate_script), "--upstream", endpoint, "--port-file", str(port_file)],
                            stdout=log.with_suffix(".gate").open("w"), stderr=subprocess.STDOUT)
    for _ in range(300):
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.1)
    gate_endpoint = f"http://127.0.0.1:{port_file.read_text().strip()}"
    yield {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": gate_endpoint, "AWS_EC2_METADATA_DISABLED": "true",
        "WAL_STORAGE": "s3", "SKIPPR_WAL_S3_BUCKET": "pywal", "SKIPPR_STATE_STORE": "dynamodb",
        "_GATE": gate_endpoint,
    }
    stats = json.load(urllib.request.urlopen(gate_endpoint + "/__gate/stats", timeout=10))
    gate.terminate()
    gate.wait(timeout=30)
    server.terminate()
    server.wait(timeout=30)
    assert stats["refused"] == {}, f"the gate refused requests: {stats['refusals']}"


def test_python_sync_and_query_on_s3_and_dynamodb(workdir, monkeypatch, moto):
    cli_dir, py_dir = workdir / "cli", workdir / "py"
    for d in (cli_dir, py_dir):
        d.mkdir()
        (d / "skippr.yml").write_text(sample_config(ROWS))
    r = run_skipprd(["sync", "--pipeline", "bikehire", "--once"], cli_dir)
    assert r.returncode == 0, r.stderr

    for name, value in moto.items():
        if not name.startswith("_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("SKIPPR_STATE_DYNAMODB_TABLE", "python-state")
    monkeypatch.setenv("BUFFER_THRESHOLD_BYTES", "200000")
    monkeypatch.setenv("DATA_DIR", str(py_dir / "data"))
    stats = skippr.sync("bikehire", config=py_dir / "skippr.yml")
    assert stats["exit_code"] == 0
    assert stats["rows_landed"] == ROWS and stats["batches_landed"] > 1
    assert digest(py_dir / "out.duckdb") == digest(cli_dir / "out.duckdb")

    # Another machine: no DATA_DIR, and the state is still there, in DynamoDB.
    shutil.rmtree(py_dir / "data")
    shown = dict((row["property"], row["value"])
                 for row in skippr.query("SHOW PIPELINE bikehire", config=str(py_dir / "skippr.yml")))
    assert shown["state"] == "DynamoDB table python-state"
    assert shown["wal"] == "s3://pywal/bikehire/wal/"
    assert shown["last_landed_batch"] == stats["last_batch_landed"]
    again = skippr.sync("bikehire", once=True, config=py_dir / "skippr.yml")
    assert again["rows_read"] == 0 and again["rows_landed"] == 0
    assert digest(py_dir / "out.duckdb") == digest(cli_dir / "out.duckdb")
    skippr.query("RESET PIPELINE bikehire", config=str(py_dir / "skippr.yml"))
    shown = dict((row["property"], row["value"])
                 for row in skippr.query("SHOW PIPELINE bikehire", config=str(py_dir / "skippr.yml")))
    assert shown["epoch"] == "2"
