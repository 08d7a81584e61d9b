"""The formal checks of the LLR (``ethlink formal``, docs/link.md): the delivery properties
hold in every trace up to the bound, every cover statement is reached; delivery in order and
exactly once (in its two halves), no bad frame delivered, a replay buffer that never overruns
and out-of-window ACK/NACKs that change nothing are proven for all time; each proof fails on
an LLR with a defect of its kind."""

import contextlib
import json

import pytest

from ethlink.rtl.link import llr_rx, llr_tx
from ethlink.sim.formal import llr
from ethlink.sim.formal.llr import PROOF_DEFAULTS, run_proof, window_proof


#: The sender's half of the in-order proof, the longest check, runs as a test of its own.
SENDER = ("order_tx",)


def test_llr_checks(tmp_path):
    checks = tuple(task for task in llr.CHECKS if task not in SENDER)
    result = run_proof(tmp_path / "formal", checks=checks)
    assert result["passed"], json.dumps(result)
    assert result["tasks"] == {task: "PASS" for task in checks}
    assert result["modes"] == {"delivery": "bmc", "cover": "cover", "order_rx": "prove",
                               "order_rx_cut": "prove", "bad_frames": "prove",
                               "bad_frames_cut": "prove", "replay": "prove",
                               "replay_words": "prove", "window": "prove"}
    # Every register and output of LlrTx is among the signals proven equal, not a handful.
    assert result["window_signals"] > 1000


def test_llr_sender_order_proof(tmp_path):
    result = run_proof(tmp_path / "formal", checks=SENDER)
    assert result["passed"], json.dumps(result)
    assert result["tasks"] == {"order_tx": "PASS"} and result["modes"] == {"order_tx": "prove"}
    assert set(SENDER) <= set(llr.CHECKS)      # ``ethlink formal`` runs it too


@pytest.mark.parametrize("mutant", ["window_one_too_wide"])
def test_window_proof_finds_a_wrong_window(tmp_path, monkeypatch, mutant):
    """An LLR that also accepts an ACK/NACK for one past the newest frame sent (an off-by-one
    in the window) lets such an LCW move ``head``: the equivalence fails."""
    correct = llr_tx.seq_in_window
    monkeypatch.setattr(llr_tx, "seq_in_window",
                        lambda seq, low, high: correct(seq, low, (high + 1)[:llr_tx.SEQ_BITS]))
    tmp_path.mkdir(exist_ok=True)
    config = {key: PROOF_DEFAULTS[key] for key in ("buffer_words", "buffer_frames",
                                                    "replay_max")}
    status, _, _ = window_proof(tmp_path, **config)
    assert status == "FAIL"
    assert "unproven $equiv" in (tmp_path / "window.ys.log").read_text()


@pytest.mark.parametrize("side, task", [(llr_tx, "replay_words"), (llr_rx, "bad_frames"),
                                        (llr_rx, "order_rx")])
def test_proofs_find_a_short_margin(tmp_path, monkeypatch, side, task):
    """An LLR whose room check (the sender's replay buffer, or the receiver's buffer) keeps
    space for 1-word frames while its frames have 2 words can start a frame with one word free
    and write over a word it holds: the proof does not go through."""
    @contextlib.contextmanager
    def short_margin():
        saved = llr_tx.MAX_FRAME_WORDS, llr_rx.MAX_FRAME_WORDS
        llr_tx.MAX_FRAME_WORDS = llr_rx.MAX_FRAME_WORDS = llr.MAX_FRAME_WORDS
        side.MAX_FRAME_WORDS = llr.MAX_FRAME_WORDS - 1
        try:
            yield
        finally:
            llr_tx.MAX_FRAME_WORDS, llr_rx.MAX_FRAME_WORDS = saved
    monkeypatch.setattr(llr, "_small_frames", short_margin)
    result = run_proof(tmp_path / "formal", checks=(task,))
    assert result["tasks"][task] != "PASS", result


class _SkippingAcceptor(llr_rx.RxAcceptor):
    """An acceptor that moves its expected seq two on when it accepts a frame: it skips one."""
    def elaborate(self, platform):
        m = super().elaborate(platform)
        with m.If(self.events.committed):
            m.d.sync += self.expected.eq(self.expected + 2)
        return m


@pytest.mark.parametrize("task", ["order_rx", "order_rx_cut"])
def test_order_proof_finds_a_skipped_frame(tmp_path, monkeypatch, task):
    """A receiver that skips a sequence number after each frame it accepts delivers frame 2
    after frame 0: the receiver's half of the in-order proof fails."""
    monkeypatch.setattr(llr_rx, "RxAcceptor", _SkippingAcceptor)
    result = run_proof(tmp_path / "formal", checks=(task,))
    assert result["tasks"][task] != "PASS", result


class _StaleSeqReader(llr_tx.ReplayReader):
    """A reader that labels the beat it offers with the frame it reads next (``send``), not
    the frame the beat belongs to: a frame's last beat goes out with the next frame's number."""
    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.mac.payload.user.seq.eq(self.send)
        return m


def test_order_proof_finds_a_wrong_number(tmp_path, monkeypatch):
    """The sender's half of the in-order proof fails on a sender whose beats may carry
    another frame's sequence number."""
    monkeypatch.setattr(llr_tx, "ReplayReader", _StaleSeqReader)
    result = run_proof(tmp_path / "formal", checks=("order_tx",))
    assert result["tasks"]["order_tx"] != "PASS", result


def test_formal_cli_reports_both(cli, tmp_path, monkeypatch):
    """The command runs both harnesses, prints each task's status and writes one JSON: the
    CBFC report at the top level, the LLR's under ``llr``; a failure of either fails it."""
    from ethlink.sim.formal import cbfc, llr
    monkeypatch.setattr(cbfc, "run_proof", lambda workdir, **kw: {
        "depth": 1, "seconds": 0.1, "passed": True, "mode": "prove",
        "tasks": {"prove_overflow": "PASS", "cover": "PASS"}, "params": {}})
    monkeypatch.setattr(llr, "run_proof", lambda workdir, **kw: {
        "depth": 20, "cover_depth": 20, "seconds": 0.2, "passed": False, "window_signals": 1,
        "modes": {"delivery": "bmc", "cover": "cover", "replay": "prove", "window": "prove"},
        "tasks": {"delivery": "FAIL", "cover": "PASS", "replay": "PASS", "window": "PASS"},
        "params": {}})
    out = tmp_path / "f.json"
    status, stdout, stderr = cli("formal", "--json", str(out))
    assert status == 1 and "FAILED" in stderr
    assert "prove_overflow" in stdout and "llr  delivery" in stdout and "FAIL" in stdout
    report = json.loads(out.read_text())
    assert report["passed"] is False and report["mode"] == "prove"
    assert report["llr"]["tasks"]["delivery"] == "FAIL"
    status, stdout, _ = cli("formal", "--proof", "cbfc", "--json", str(out))
    assert status == 0 and "llr" not in stdout
    assert "llr" not in json.loads(out.read_text())
