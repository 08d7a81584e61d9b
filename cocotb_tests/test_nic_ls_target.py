"""The NIC's Load/Store target (parser → LsResponder → deparser, AXI4 manager port) against the
golden target model (sim/models/nic.py), with cocotbext-axi's AXI RAM as the GPU memory.

Random loads and stores of every size, inside, across and outside random memory windows,
misaligned and beyond the address space, malformed and unexpected requests, frames the
parser drops and requests found bad at their last beat (``tuser``: cut-through), with random idles on the request stream and random back-pressure on the response
stream and on every AXI channel. Every response is compared octet for octet with the model's,
the whole memory octet for octet at the end, and every counter. Loads and stores of the same
few lines back to back (a read must never overtake a write, nor a write a read). Then the
cycle latencies the docstring states.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.forwarding.parser import LS_HEADER_OCTETS, header_geometry
from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_responder import LsResponder, LsTarget
from ethlink.rtl.wire import LsSize, Opcode
from ethlink.sim.models import Frame, random_frame
from ethlink.sim.models.nic import LINE_OCTETS, Window
from ethlink.sim.nic_tb import LsTargetTB
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import StreamChecker, TransferLog, ValidLog, read_counters, wait_idle

EXPORT = "nic_ls_target"


def random_windows(rng, count, memory_lines):
    """``count`` windows: one large read/write one, the others small, of every permission."""
    windows = [Window(base=0, size=memory_lines // 4, perm=csr.PERM_READ | csr.PERM_WRITE)]
    for _ in range(count - 1):
        size = rng.randrange(1, 64)
        windows.append(Window(base=rng.randrange(0, memory_lines - size), size=size,
                              perm=rng.randrange(4)))
    return windows


def request(rng, windows, memory_lines, opcode=None):
    """A random L/S request: mostly inside a window, else anywhere, misaligned or beyond the
    address space."""
    opcode = opcode or rng.choice([Opcode.LOAD_REQ, Opcode.STORE_REQ])
    size = rng.choice([LsSize.B64, LsSize.B128, LsSize.B256])
    lines = LsSize(size).octets // LINE_OCTETS
    where = rng.random()
    if where < 0.75:
        window = rng.choice(windows)
        line = window.base + rng.randrange(max(1, window.size + 2)) - 1
        line = max(0, line) & ~(lines - 1)
    elif where < 0.85:
        line = rng.randrange(memory_lines) & ~(lines - 1)
    elif where < 0.93:
        line = rng.randrange(memory_lines) | (1 if lines > 1 else 0)
    else:
        line = rng.randrange(memory_lines - 4, 1 << 44)
    payload = rng.randbytes(LsSize(size).octets) if opcode == Opcode.STORE_REQ else b""
    return Frame(opcode=opcode, dst=rng.randrange(1024), src=rng.randrange(1024),
                 entropy=rng.randrange(1 << 16), size=size, tag=rng.randrange(4096), line=line,
                 payload=payload)


def spoiled(rng, windows, memory_lines):
    """A request the target must drop: a malformed one (wrong payload length), another
    engine's opcode, or a frame the parser refuses (bad version). Returns ``(body, frame)``;
    ``frame`` is ``None`` when the parser drops it."""
    kind = rng.randrange(3)
    if kind == 0:
        frame = request(rng, windows, memory_lines)
        if frame.opcode == Opcode.STORE_REQ:
            frame.payload = frame.payload[:rng.randrange(len(frame.payload))] \
                if rng.random() < 0.5 else frame.payload + rng.randbytes(rng.randrange(1, 9))
        else:
            frame.payload = rng.randbytes(rng.randrange(1, 70))
        return frame.body(), frame
    if kind == 1:
        frame = random_frame(rng, opcode=rng.choice([Opcode.LOAD_RSP, Opcode.STORE_RSP,
                                                     Opcode.WRITE, Opcode.ACK]), max_payload=80)
        return frame.body(), frame
    body = bytearray(request(rng, windows, memory_lines).body())
    body[0] &= 0x3F                      # OEFH ver = 0
    return bytes(body), None


@cocotb.test()
async def random_requests(dut):
    """Every response and every memory octet as the model says, whatever the stalls."""
    params = export_params()
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = LsTargetTB(dut, rng, axi_pause=0.2, idle=0.3, backpressure=0.3)
    await tb.reset()
    model, source, sink, memory_lines = tb.model, tb.source, tb.sink, tb.memory_lines
    windows = random_windows(rng, params["windows"], memory_lines)
    await tb.program_windows(windows)
    for index, window in enumerate(windows):
        base = csr.WINDOW + csr.WINDOW_STRIDE * index
        assert await tb.csr.read(base + 2) == window.size
        assert await tb.csr.read(base + 3) == window.perm

    checker = StreamChecker(dut, "m_axis")
    expected, dropped_by_parser, judged_bad = [], 0, 0
    for n in range(600):
        if rng.random() < 0.08:
            # Passed on before it was judged, then found bad (``tuser`` on its last beat):
            # no memory access, no response, no count.
            judged_bad += 1
            await source.send(AxiStreamFrame(request(rng, windows, memory_lines).body(),
                                             tuser=1))
            continue
        if rng.random() < 0.1:
            body, frame = spoiled(rng, windows, memory_lines)
        else:
            frame = request(rng, windows, memory_lines)
            body = frame.body()
        if frame is None:
            dropped_by_parser += 1
        else:
            response = model.handle(frame)
            if response is not None:
                expected.append(response)
        await source.send(AxiStreamFrame(body, tuser=0))
    await wait_idle(dut, [source], [(sink, len(expected))], timeout_cycles=200000)
    await ClockCycles(dut.clk, 200)
    assert sink.count() == len(expected), f"{sink.count()} responses, expected {len(expected)}"
    for n, want in enumerate(expected):
        got = bytes((await sink.recv()).tdata)
        assert got == want.body(), (f"response {n}: {got.hex()}\n"
                                    f"expected {want.body().hex()} ({want})")
    checker.assert_clean()
    assert tb.memory_matches(), "memory differs from the model"

    for name, got in read_counters(dut, LsResponder.COUNTERS).items():
        assert got == model.counters[name], f"count_{name} = {got}, model {model.counters[name]}"
        assert await tb.csr.read(csr.COUNTERS + LsResponder.COUNTERS.index(name)) == got
    assert int(dut.count_rx_bad_version.value) == dropped_by_parser
    kinds = {name: model.counters[name] for name in ("loads", "stores", "denied",
                                                     "address_errors", "malformed", "unexpected")}
    assert all(kinds.values()), f"a kind of request was never exercised: {kinds}"
    assert judged_bad > 20
    dut._log.info(f"{len(expected)} responses, {kinds}, {dropped_by_parser} dropped by parser, "
                  f"{judged_bad} judged bad")


@cocotb.test()
async def same_lines_back_to_back(dut):
    """Loads and stores of the same few lines back to back, with pauses on every AXI channel:
    a load issued behind a store must see its data and a store behind a load must not change
    what the load returns (the target never lets a read overtake a write or the reverse)."""
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    tb = LsTargetTB(dut, rng, axi_pause=0.3, backpressure=0.2)
    await tb.reset()
    model, source, sink = tb.model, tb.source, tb.sink
    await tb.open_memory()
    expected = []
    for _ in range(300):
        opcode = rng.choice([Opcode.LOAD_REQ, Opcode.STORE_REQ])
        size = rng.choice([LsSize.B64, LsSize.B128])
        line = rng.choice([0, 2]) + (rng.randrange(2) if size == LsSize.B64 else 0)
        frame = Frame(opcode=opcode, dst=1, src=2, size=size, tag=len(expected), line=line,
                      payload=rng.randbytes(LsSize(size).octets)
                      if opcode == Opcode.STORE_REQ else b"")
        expected.append(model.handle(frame))
        await source.send(AxiStreamFrame(frame.body()))
    await wait_idle(dut, [source], [(sink, len(expected))], timeout_cycles=100000)
    for n, want in enumerate(expected):
        got = bytes((await sink.recv()).tdata)
        assert got == want.body(), f"response {n}: {got.hex()}, expected {want.body().hex()}"
    assert tb.memory_matches(), "memory differs from the model"


@cocotb.test()
async def no_window_refuses_everything(dut):
    """After reset no window is open: every request is refused and memory is untouched."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    tb = LsTargetTB(dut, rng)
    await tb.reset()
    model, source, sink, memory_lines = tb.model, tb.source, tb.sink, tb.memory_lines
    assert await tb.csr.read(csr.ID) == csr.ID_VALUE
    frames = [request(rng, [Window(0, memory_lines, 3)], memory_lines) for _ in range(60)]
    for frame in frames:
        await source.send(AxiStreamFrame(frame.body()))
    await wait_idle(dut, [source], [(sink, len(frames))])
    for frame in frames:
        want = model.handle(frame)
        assert want.status != 0
        assert bytes((await sink.recv()).tdata) == want.body()
    assert tb.memory_matches()


@cocotb.test()
async def latency(dut):
    """Cycle latencies of the docstring: frame in → AXI request out, and → response out."""
    params = export_params()
    width = params["beat_octets"]
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    tb = LsTargetTB(dut, rng)
    await tb.reset()
    await tb.open_memory()
    counter, model, source, sink = tb.counter, tb.model, tb.source, tb.sink
    memory_lines = tb.memory_lines
    frames_in = TransferLog(dut, "s_axis", counter)
    ar = ValidLog(dut.m_axi_arvalid, dut.clk, counter)
    aw = ValidLog(dut.m_axi_awvalid, dut.clk, counter)
    r = ValidLog(dut.m_axi_rvalid, dut.clk, counter)
    frames_out = TransferLog(dut, "m_axis", counter)
    th_beat, _ = header_geometry(LS_HEADER_OCTETS, width)
    for n, opcode in enumerate((Opcode.LOAD_REQ, Opcode.STORE_REQ)):
        frame = request(rng, [Window(0, memory_lines, 3)], 1 << 20, opcode=opcode)
        frame.line = 64 * n
        frame.size = LsSize.B64
        frame.payload = frame.payload[:64]
        await source.send(AxiStreamFrame(frame.body()))
        await wait_idle(dut, [source], [(sink, 1)])
        assert bytes((await sink.recv()).tdata) == model.handle(frame).body()
        first_in = frames_in.frame_starts[n]
        last_in = frames_in.transfers[-1][0]
        th_in = frames_in.transfers[[c for c, _ in frames_in.transfers].index(first_in) + th_beat][0]
        if opcode == Opcode.LOAD_REQ:
            issue = ar.rises[0] - th_in
            assert issue == LsTarget.LOAD_ISSUE_LATENCY, f"AR valid {issue} cycles after the TH"
        else:
            issue = aw.rises[0] - last_in
            assert issue == LsTarget.STORE_ISSUE_LATENCY, f"AW valid {issue} cycles after its end"
        dut._log.info(f"{opcode.name}: frame in {first_in}..{last_in}, AXI request "
                      f"+{issue}, response at {frames_out.frame_starts[n]}")
    load_rsp = frames_out.frame_starts[0] - r.rises[0]
    assert load_rsp == LsTarget.LOAD_RESPONSE_LATENCY, f"LOAD_RSP {load_rsp} cycles after R valid"


@pytest.mark.parametrize("params", [
    {"beat_octets": 8, "windows": 8, "addr_width": 16},
    {"beat_octets": 64, "windows": 16, "addr_width": 18},
], ids=lambda p: f"w{p['beat_octets']}")
def test_nic_ls_target(params, tmp_path):
    run_cocotb(EXPORT, "test_nic_ls_target", params, test_dir=tmp_path)
