"""The bounded formal check of the LLR (``ethlink formal``, docs/link.md): every property holds
in every trace up to the bound and every cover statement is reached."""

import json

from ethlink.sim.formal.llr import run_proof


def test_llr_bounded_check(tmp_path):
    result = run_proof(tmp_path / "formal")
    assert result["mode"] == "bmc"
    assert result["passed"], json.dumps(result)
    assert set(result["tasks"].values()) == {"PASS"}, result["tasks"]


def test_formal_cli_reports_both(cli, tmp_path, monkeypatch):
    """The command runs both harnesses, prints each task's status and writes one JSON: the
    CBFC report at the top level, the LLR's under ``llr``; a failure of either fails it."""
    from ethlink.sim.formal import cbfc, llr
    monkeypatch.setattr(cbfc, "run_proof", lambda workdir, **kw: {
        "depth": 1, "seconds": 0.1, "passed": True, "mode": "prove",
        "tasks": {"prove_overflow": "PASS", "cover": "PASS"}, "params": {}})
    monkeypatch.setattr(llr, "run_proof", lambda workdir, **kw: {
        "depth": 20, "cover_depth": 20, "seconds": 0.2, "passed": False, "mode": "bmc",
        "tasks": {"bmc": "FAIL", "cover": "PASS"}, "params": {}})
    out = tmp_path / "f.json"
    status, stdout, stderr = cli("formal", "--json", str(out))
    assert status == 1 and "FAILED" in stderr
    assert "prove_overflow" in stdout and "llr  bmc" in stdout and "FAIL" in stdout
    report = json.loads(out.read_text())
    assert report["passed"] is False and report["mode"] == "prove"
    assert report["llr"]["tasks"]["bmc"] == "FAIL"
    status, stdout, _ = cli("formal", "--proof", "cbfc", "--json", str(out))
    assert status == 0 and "llr" not in stdout
    assert "llr" not in json.loads(out.read_text())
