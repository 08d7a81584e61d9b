"""One link end (export ``link_end``) against a scripted partner written from the spec: the test
bench drives ``rxd``/``rxc`` word by word with the MAC model (sim/models/mac.py) and decodes
everything the end sends on ``txd``/``txc``.

Checks the LLR rules of spec §7 one by one: INIT/INIT_ECHO, cumulative ACKs, NACK → replay
(and the replay reaction time in cycles), the replay timer, out-of-window ACK/NACK ignored and
counted, corrupted LCWs dropped, and on the receive side in-order acceptance, one NACK then
discard-until-expected, duplicates, bad FCS; void frames (spec v1.1 §7) both ways.
"""

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ethlink.rtl.link.llr_rx import RxState
from ethlink.rtl.wire import LcwType, LLR_PAYLOAD, XgmiiControl
from ethlink.sim.link_tb import SEQ_MOD, LinkEndTB, seq_of
from ethlink.sim.models.mac import frame_words, gap_words, lcw_word
from ethlink.sim.models.transcode import IDLE_WORD, XgmiiWord
from ethlink.sim.runner import run_cocotb
from ethlink.sim.tb import axis_sink, axis_source

EXPORT = "link_end"
#: Goal of the issue: LLR_NACK on rxd → first word of the replayed frame on txd.
REPLAY_REACTION_GOAL = 8
ACK_EVERY = 8


async def bring_up(dut, replay_timeout=0):
    """The end reset and in ADVANCE; returns its cycle counter and its partner."""
    tb = LinkEndTB(dut, replay_timeout)
    await tb.reset()
    return tb.counter, tb.partner


async def send_bodies(dut, source, bodies):
    for body in bodies:
        await source.send(body)
    while not source.idle():
        await RisingEdge(dut.clk)


@cocotb.test()
async def replay_on_nack(dut):
    """NACK of the last good seq replays from the next frame; the first replayed word leaves
    within the goal; a NACK during a long frame cuts it (/E/) and replays at once."""
    rng = random.Random(1)
    counter, partner = await bring_up(dut, 100_000)
    source = axis_source(dut, "s_axis")
    bodies = [rng.randbytes(rng.randint(20, 120)) for _ in range(4)]
    await send_bodies(dut, source, bodies)
    await ClockCycles(dut.clk, 40)
    sent = partner.frames()
    assert [f.body for f in sent] == bodies and [f.seq for f in sent] == [0, 1, 2, 3]
    assert all(f.error is None for f in sent)

    # ACK 1 frees frames 0 and 1; NACK 1 then asks for 2 and 3 again.
    partner.send_lcw(LcwType.LLR_ACK, seq=1)
    await ClockCycles(dut.clk, 10)
    assert int(dut.count_acks_received.value) == 1
    partner.send_lcw(LcwType.LLR_NACK, seq=1)
    await partner.idle()
    nack_cycle = partner.sent_at[-1][0]
    await ClockCycles(dut.clk, 60)
    replayed = partner.frames(since=nack_cycle)
    assert [f.seq for f in replayed] == [2, 3] and [f.body for f in replayed] == bodies[2:]
    start_cycle = next(c for c, w in partner.tx if c > nack_cycle
                       and w.lanes()[0] == (XgmiiControl.START, 1))
    reaction = start_cycle - nack_cycle
    dut._log.info("replay reaction (TX idle): %d cycles", reaction)
    assert reaction <= REPLAY_REACTION_GOAL, reaction
    assert int(dut.count_replays.value) == 1
    assert int(dut.count_frames_replayed.value) == 2

    # A NACK while a long frame is on the wire: it is cut and the replay starts at once.
    long_body = rng.randbytes(1500)
    task = cocotb.start_soon(send_bodies(dut, source, [long_body]))
    while int(dut.count_mac_tx_frames.value) < 4 and not any(
            w.lanes()[0] == (XgmiiControl.START, 1) for c, w in partner.tx[-1:]):
        await RisingEdge(dut.clk)
    await ClockCycles(dut.clk, 30)
    partner.send_lcw(LcwType.LLR_NACK, seq=3)
    await partner.idle()
    nack_cycle = partner.sent_at[-1][0]
    await task
    await ClockCycles(dut.clk, 300)
    events = partner.frames(since=nack_cycle - 40)
    assert events[0].error == "error_chars", events[0]      # the cut frame
    assert events[1].seq == 4 and events[1].body == long_body and events[1].error is None
    start_cycle = next(c for c, w in partner.tx if c > nack_cycle
                       and w.lanes()[0] == (XgmiiControl.START, 1))
    reaction = start_cycle - nack_cycle
    dut._log.info("replay reaction (frame cut): %d cycles", reaction)
    assert reaction <= REPLAY_REACTION_GOAL, reaction
    assert int(dut.count_mac_tx_aborts.value) == 1


@cocotb.test()
async def line_rate(dut):
    """Back-to-back frames leave at the MAC's framing limit: each frame takes exactly its
    words plus the minimal gap (PINGs and ACKs aside, which the partner does not cause here)."""
    rng = random.Random(4)
    counter, partner = await bring_up(dut, 100_000)
    source = axis_source(dut, "s_axis")
    # Fewer octets than the replay buffer holds: the partner sends no ACK here.
    bodies = [rng.randbytes(rng.choice([14, 78, 128, 333, 1000])) for _ in range(16)]
    since = counter.now
    await send_bodies(dut, source, bodies)
    await ClockCycles(dut.clk, 60)
    words = [(c, w) for c, w in partner.tx if c >= since]
    starts = [c for c, w in words if w.lanes()[0] == (XgmiiControl.START, 1)]
    lcws = sum(1 for c, w in words if starts[0] <= c < starts[-1]
               and w.lanes()[0] == (XgmiiControl.LCW, 1))
    expected = sum(len(frame_words(b)[0]) + gap_words(frame_words(b)[1], 12)
                   for b in bodies[:-1])
    assert [f.body for f in partner.frames(since)] == bodies
    # An LCW (a PING) may take a word of its own inside a frame; nothing else may.
    assert starts[-1] - starts[0] <= expected + lcws, (starts[-1] - starts[0], expected, lcws)


@cocotb.test()
async def window_and_corruption(dut):
    """ACK/NACK outside the window are ignored and counted; an LCW with a bad crc8 is dropped
    and counted; the replay timer resends everything outstanding."""
    rng = random.Random(2)
    counter, partner = await bring_up(dut, 400)
    source = axis_source(dut, "s_axis")
    bodies = [rng.randbytes(rng.randint(20, 80)) for _ in range(3)]
    await send_bodies(dut, source, bodies)
    await ClockCycles(dut.clk, 30)
    for lcw_type, seq in ((LcwType.LLR_ACK, 3), (LcwType.LLR_ACK, 0x54321),
                          (LcwType.LLR_NACK, 7), (LcwType.LLR_NACK, SEQ_MOD - 2)):
        partner.send_lcw(lcw_type, seq=seq)
    # A good ACK of frame 2 with its crc8 broken.
    bad = lcw_word(LcwType.LLR_ACK, LLR_PAYLOAD.to_int(seq=2))
    partner.send_words([XgmiiWord(bad.data ^ (1 << 60), bad.ctrl)])
    await ClockCycles(dut.clk, 20)
    assert int(dut.count_out_of_window.value) == 4
    assert int(dut.count_mac_rx_lcw_crc_errors.value) == 1
    # Received and counted, but ignored: no replay, nothing freed.
    assert int(dut.count_acks_received.value) == 2
    assert int(dut.count_nacks_received.value) == 2
    assert int(dut.count_replays.value) == 0
    # Nothing acknowledged: the timer replays all three.
    since = counter.now
    await ClockCycles(dut.clk, 500)
    assert int(dut.count_timeouts.value) >= 1
    assert [f.seq for f in partner.frames(since)][:3] == [0, 1, 2]
    partner.send_lcw(LcwType.LLR_ACK, seq=2)
    await ClockCycles(dut.clk, 20)
    timeouts = int(dut.count_timeouts.value)
    await ClockCycles(dut.clk, 1000)
    assert int(dut.count_timeouts.value) == timeouts, "timer ran with nothing outstanding"


@cocotb.test()
async def receiver_rules(dut):
    """The receive side: INIT is echoed; frames in order are delivered and ACKed
    cumulatively; a gap gives exactly one NACK and everything until the expected seq is
    discarded; a duplicate is dropped and re-ACKed; a bad FCS gives a NACK."""
    rng = random.Random(3)
    counter, partner = await bring_up(dut)
    sink = axis_sink(dut, "m_axis")
    partner.send_lcw(LcwType.LLR_INIT, seq=100, nonce=0x1234)
    await ClockCycles(dut.clk, 20)
    echoes = partner.lcws(LcwType.LLR_INIT_ECHO)
    assert echoes and echoes[-1].payload == LLR_PAYLOAD.to_int(seq=100, nonce=0x1234)
    assert int(dut.rx_state.value) == RxState.SEND_ACKS.value

    bodies = [rng.randbytes(rng.randint(10, 90)) for _ in range(12)]
    for n, body in enumerate(bodies[:ACK_EVERY]):
        partner.send_frame(body, 100 + n)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    got = [bytes((await sink.recv()).tdata) for _ in range(ACK_EVERY)]
    assert got == bodies[:ACK_EVERY]
    acks = partner.lcws(LcwType.LLR_ACK)
    assert acks and seq_of(acks[-1].payload) == 100 + ACK_EVERY - 1

    # Frame 108 goes missing: 109 draws one NACK(107), 110 is discarded silently.
    since = counter.now
    partner.send_frame(bodies[9], 109)
    partner.send_frame(bodies[10], 110)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    nacks = partner.lcws(LcwType.LLR_NACK, since)
    assert len(nacks) == 1 and seq_of(nacks[0].payload) == 107
    assert int(dut.rx_state.value) == RxState.NACK_SENT.value
    assert sink.empty()
    # The replay: 108, 109, 110 in order.
    for n in (8, 9, 10):
        partner.send_frame(bodies[n], 100 + n)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    assert [bytes((await sink.recv()).tdata) for _ in range(3)] == bodies[8:11]
    assert int(dut.rx_state.value) == RxState.SEND_ACKS.value

    # A duplicate of 110 is dropped and answered with an ACK of 110.
    since = counter.now
    partner.send_frame(bodies[10], 110)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    assert sink.empty()
    assert int(dut.count_duplicates.value) == 1
    assert seq_of(partner.lcws(LcwType.LLR_ACK, since)[-1].payload) == 110

    # A bad FCS on 111: NACK(110), nothing delivered.
    since = counter.now
    words, _ = frame_words(bodies[11], 111)
    words[2] = XgmiiWord(words[2].data ^ 0x10, words[2].ctrl)
    partner.send_words(words + [IDLE_WORD] * 2)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    nacks = partner.lcws(LcwType.LLR_NACK, since)
    assert len(nacks) == 1 and seq_of(nacks[0].payload) == 110
    assert sink.empty()
    assert int(dut.count_bad_frames.value) == 1
    assert int(dut.count_mac_rx_fcs_errors.value) == 1
    assert int(dut.count_frames_received.value) == 11


async def send_void(dut, source, body):
    """Offer ``body`` with ``i_void`` (read with its last beat)."""
    dut.i_void.value = 1
    await send_bodies(dut, source, [body])
    dut.i_void.value = 0


@cocotb.test()
async def void_frames(dut):
    """Sender: a frame voided with its last beat goes out with the inverted FCS and its seq
    is the next frame's; it is never replayed. Receiver: a void frame is dropped without a
    NACK and without using the expected seq, and counted; one whose FCS the line corrupted is
    an ordinary bad frame (NACK)."""
    rng = random.Random(5)
    counter, partner = await bring_up(dut, 100_000)
    dut.i_void.value = 0
    source = axis_source(dut, "s_axis")
    sink = axis_sink(dut, "m_axis")
    # Void frames long enough that the MAC starts them before their last beat is offered
    # (they go out, cut through), and a short one that may be voided before it starts.
    bodies = [rng.randbytes(n) for n in (60, 150, 60, 150, 60)]
    short = rng.randbytes(9)
    since = counter.now
    await send_bodies(dut, source, bodies[:1])
    await send_void(dut, source, bodies[1])
    await send_bodies(dut, source, bodies[2:3])
    await send_void(dut, source, bodies[3])
    await send_void(dut, source, short)
    await send_bodies(dut, source, bodies[4:])
    await ClockCycles(dut.clk, 60)
    sent = partner.frames(since)
    good = [(f.seq, f.body) for f in sent if f.error is None]
    assert good == [(0, bodies[0]), (1, bodies[2]), (2, bodies[4])], sent
    voids = [(f.seq, f.body) for f in sent if f.error == "void_frames"]
    assert voids in ([(1, bodies[1]), (2, bodies[3])],
                     [(1, bodies[1]), (2, bodies[3]), (2, short)]), sent
    assert len(voids) + len(good) == len(sent)
    assert int(dut.count_voided_frames.value) == 3
    assert int(dut.count_mac_tx_void_frames.value) == len(voids)
    # NACK 0: the replay starts with the frame that reused seq 1; no void frame comes back.
    since = counter.now
    partner.send_lcw(LcwType.LLR_NACK, seq=0)
    await partner.idle()
    await ClockCycles(dut.clk, 80)
    replayed = partner.frames(since)
    assert [(f.seq, f.body, f.error) for f in replayed] == \
        [(1, bodies[2], None), (2, bodies[4], None)], replayed
    partner.send_lcw(LcwType.LLR_ACK, seq=2)
    await ClockCycles(dut.clk, 20)
    assert int(dut.count_out_of_window.value) == 0

    # Receiver, from seq 200.
    partner.send_lcw(LcwType.LLR_INIT, seq=200, nonce=7)
    await ClockCycles(dut.clk, 20)
    since = counter.now
    partner.send_frame(bodies[0], 200)
    partner.send_frame(bodies[1], 201, void=True)
    partner.send_frame(bodies[2], 201)
    await partner.idle()
    await ClockCycles(dut.clk, 30)
    assert [bytes((await sink.recv()).tdata) for _ in range(2)] == [bodies[0], bodies[2]]
    assert sink.empty()
    assert not partner.lcws(LcwType.LLR_NACK, since)
    assert int(dut.rx_state.value) == RxState.SEND_ACKS.value
    assert int(dut.count_void_frames.value) == 1
    assert int(dut.count_mac_rx_void_frames.value) == 1
    assert int(dut.count_mac_rx_fcs_errors.value) == 0
    # A void frame whose FCS the line corrupted: a bad frame, NACK(201).
    since = counter.now
    words, _ = frame_words(bodies[3], 202, void=True)
    words[2] = XgmiiWord(words[2].data ^ 0x10, words[2].ctrl)
    partner.send_words(words + [IDLE_WORD] * 2)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    nacks = partner.lcws(LcwType.LLR_NACK, since)
    assert len(nacks) == 1 and seq_of(nacks[0].payload) == 201
    assert int(dut.count_void_frames.value) == 1
    assert int(dut.count_mac_rx_fcs_errors.value) == 1
    # The frame that reused seq 202 is accepted.
    partner.send_frame(bodies[4], 202)
    await partner.idle()
    await ClockCycles(dut.clk, 20)
    assert bytes((await sink.recv()).tdata) == bodies[4]


def test_llr_end(tmp_path):
    run_cocotb(EXPORT, "test_llr_end", {"ack_every": ACK_EVERY}, test_dir=tmp_path)
