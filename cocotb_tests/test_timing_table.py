"""The ECP5 figures the docs print are those of ``sim/reports/timing.json`` (the output of
``ethlink bench timing --update sim/reports/timing.json``): docs/timing.md holds the table
generated from it, and each of the README's ECP5 figures is that of its export's row."""

import json
import re
from pathlib import Path

from ethlink import bench

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "sim" / "reports" / "timing.json"

#: README row (its first cell) -> the build whose figures it prints.
README_BUILDS = {
    "`OefhDeparser`": ("oefh_deparser", {}),
    "`OefhParser`": ("oefh_parser", {}),
    "`LsTarget` (NIC L/S target)": ("nic_ls_target", {}),
    "`Nic` (2 ports: L/S and RDMA engines + MAC/LLR/CBFC per port, steering)": ("nic", {}),
    "`SwitchCore` (radix 4)": ("switch_core", {"radix": 4}),
}


def _report():
    return json.loads(REPORT.read_text())


def _row(report, export, params):
    [row] = [row for row in report["rows"]
             if row["export"] == export and row["params"] == params]
    return row


def test_report_covers_every_build():
    """One row per build of ``bench timing``, each built with at least 3 seeds from a
    committed design."""
    report = _report()
    assert [(row["export"], row["params"]) for row in report["rows"]] == [
        (name, params) for name, params in bench.timing_builds()]
    assert report["seeds"] >= 3
    for row in report["rows"]:
        assert "error" not in row, row
        assert row["commit"] and not row["commit"].endswith("+"), row["export"]
        assert len(row["fmax_by_seed"]) == report["seeds"] or row["fmax_mhz"] is None


def test_report_is_of_the_current_design():
    """Every row was built from the Verilog the export elaborates to now: a change to the RTL
    that reaches an export's netlist needs its row rebuilt (``ethlink bench timing --stale``
    lists them)."""
    assert bench.stale_builds(_report()) == []


def test_timing_md_is_generated():
    """docs/timing.md shows the table ``ethlink bench timing --markdown`` makes of the report."""
    assert bench.timing_markdown(_report()) in (ROOT / "docs" / "timing.md").read_text()


def test_readme_figures():
    """Each ECP5 figure of the README's block table is its export's in the report."""
    report = _report()
    lines = (ROOT / "README.md").read_text().splitlines()
    for first, (export, params) in README_BUILDS.items():
        [line] = [line for line in lines if line.startswith(f"| {first} |")]
        ecp5 = line.rstrip(" |").rsplit(" | ", 1)[1]
        row = _row(report, export, params)
        figures = re.match(r"([\d.]+) MHz \(median of (\d) seeds, ([\d.]+)–([\d.]+)\), (\d+) LUT, "
                           r"(\d+) FF, (\d+) EBR", ecp5)
        assert figures, line
        assert figures.groups() == (
            f"{row['fmax_mhz']:.1f}", str(report["seeds"]), f"{row['fmax_min_mhz']:.1f}",
            f"{row['fmax_max_mhz']:.1f}", str(row["lut"]), str(row["ff"]), str(row["ebr"]))


def test_merge_and_markdown():
    """``--update`` keeps the rows it did not rebuild, in the bench's order; the Markdown row
    gives the median, the span, the period at the median and the path."""
    def row(export, params, fmax):
        return {"export": export, "params": params, "commit": "abc1234", "fmax_mhz": fmax,
                "fmax_min_mhz": fmax - 1, "fmax_max_mhz": fmax + 1, "lut": 10, "ff": 20,
                "ebr": 1, "lutram": 2, "critical_path": {"from": "a.q", "to": "b.d",
                                                          "logic_ns": 1.25, "routing_ns": 6.5}}
    old = {"device": "X", "seeds": 3, "rows": [row("nic", {}, 70.0), row("mac_tx", {}, 180.0),
                                               row("gone", {}, 1.0)]}
    new = {"device": "X", "seeds": 3, "rows": [row("oefh_parser", {}, 200.0),
                                               row("nic", {}, 80.0)]}
    merged = bench.merge_timing(old, new)
    assert [(r["export"], r["fmax_mhz"]) for r in merged["rows"]] == [
        ("oefh_parser", 200.0), ("mac_tx", 180.0), ("nic", 80.0)]
    table = bench.timing_markdown({"rows": [row("switch_core", {"radix": 4}, 125.0)]})
    assert table.splitlines()[2] == (
        "| `switch_core` | `radix=4` | 125.0 (124.0–126.0) | 8.00 | yes | 10 | 20 | 1 | 2 "
        "| `a.q` → `b.d` | 1.2 / 6.5 |")


def test_measured_fmax(tmp_path):
    """The demo's ns at the NIC's Fmax come from the report's ``nic`` row."""
    report = _report()
    nic = _row(report, "nic", {})
    assert bench.measured_fmax("nic") == (nic["fmax_mhz"], report["device"])
    assert bench.measured_fmax("nic", report=tmp_path / "none.json") is None
    assert bench.measured_fmax("switch_core", {"radix": 3}) is None
