"""The formal proof of the CBFC credit counters (``ethlink formal``, docs/cbfc.md): every
property holds and every cover statement is reached."""

import json

from ethlink.sim.formal.cbfc import run_proof


def test_cbfc_proof(tmp_path):
    result = run_proof(tmp_path / "formal")
    assert result["passed"], json.dumps(result)
    assert set(result["tasks"].values()) == {"PASS"}, result["tasks"]


def test_formal_cli_reports(cli, tmp_path, monkeypatch):
    """The command prints each task's status and writes the JSON it reports from."""
    from ethlink.sim.formal import cbfc
    monkeypatch.setattr(cbfc, "run_proof", lambda workdir, **kw: {
        "depth": 3, "seconds": 0.1, "passed": False, "mode": "prove",
        "tasks": {"prove": "FAIL", "reach_cover": "PASS"}, "params": {}})
    out = tmp_path / "f.json"
    status, stdout, stderr = cli("formal", "--json", str(out))
    assert status == 1 and "FAILED" in stderr
    assert "prove" in stdout and "FAIL" in stdout
    assert json.loads(out.read_text())["passed"] is False
