"""The FEC sublayer end to end (export ``fec_link``: FEC TX → link channel → FEC RX).

Realistic XGMII traffic (frames with every /T/ position, LCWs, idles) at one word per cycle:
with light bit errors every word arrives intact (the FEC corrects them) and on time; a burst
long enough to defeat the code turns exactly the 40 words of its codeword into /E/; in bypass
the words cross with the channel's delay only. Words are compared with the transcoding model
(sim/models/transcode.py).
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from ethlink.rtl.phy.fec.decoder import decoder_latency
from ethlink.rtl.phy.fec.symbols import beats_for
from ethlink.sim.models.transcode import (
    ERROR_WORD, WORDS_PER_MESSAGE, XgmiiWord, as_received, xgmii_stream)
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import TransferLog, start, wait_idle, xgmii_stream_pair, words_frame

EXPORT = "fec_link"
INJECTORS = 4                # the channel's default
#: Stated in the docstrings: the TX transcoder's last message beat 7 cycles after the last
#: word of its 40 (P = 8), the encoder's 1 cycle, the RX transcoder's first word 6 cycles after
#: the first message beat.
TX_LAST_WORD_TO_BEAT, ENCODER, RX_TRANSCODER = 7, 1, 6


def fec_latency(per_beat, delay):
    """First word in → first word out with the FEC on and one word per cycle: the codeword
    fills with 40 words (one per cycle), its last message beat and parity beats leave the
    transmitter, cross the line, and the decoder's "fill + N" ends one cycle after the last
    beat arrives."""
    parity_beats = beats_for(272, per_beat) - beats_for(258, per_beat)
    return ((WORDS_PER_MESSAGE - 1) + TX_LAST_WORD_TO_BEAT + ENCODER + parity_beats + delay
            + 1 + decoder_latency(per_beat) + RX_TRANSCODER)


async def setup(dut, bypass=0, ber=0.0):
    per_beat = export_params()["symbols_per_beat"]
    dut.bypass.value = bypass
    dut.link_up.value = 1
    dut.seed.value = 0x1234_5678
    dut.reseed.value = 0
    dut.burst.value = 0
    dut.burst_length.value = 0
    dut.error_threshold.value = round(ber * 10 * per_beat * 2 ** 32 / INJECTORS)
    return await start(dut)


async def send_and_collect(dut, counter, words):
    source, sink = xgmii_stream_pair(dut)
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    await source.send(words_frame(words))
    await wait_idle(dut, [source], [(sink, len(words))])
    await ClockCycles(dut.clk, 4)
    got = []
    while not sink.empty():
        frame = sink.recv_nowait()
        ctrl = frame.tuser if isinstance(frame.tuser, int) else frame.tuser[0]
        got.append(XgmiiWord(int.from_bytes(bytes(frame.tdata), "little"), ctrl))
    return got, log_in, log_out


def first_difference(got, want):
    return next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)


@cocotb.test()
async def corrected_at_line_rate(dut):
    """Bit errors at 5e-4: every word arrives intact, one word per cycle in and out, after
    exactly the stated latency; the corrections are counted."""
    params = export_params()
    rng = random.Random(cocotb.RANDOM_SEED)
    counter = await setup(dut, ber=5e-4)
    words = xgmii_stream(rng, 12 * WORDS_PER_MESSAGE)
    got, log_in, log_out = await send_and_collect(dut, counter, words)
    want = [as_received(w) for w in words]
    assert len(got) == len(want)
    assert first_difference(got, want) is None, f"first wrong word {first_difference(got, want)}"
    assert log_in.stalls == 0, f"the sublayer stalled the MAC for {log_in.stalls} cycles"
    latency = log_out.transfers[0][0] - log_in.transfers[0][0]
    assert latency == fec_latency(params["symbols_per_beat"], params["delay"]), latency
    # Once the first word is out, one word per cycle.
    cycles = log_out.transfers[-1][0] - log_out.transfers[0][0] + 1
    assert cycles == len(words), f"{len(words)} words took {cycles} cycles"
    assert 0 < int(dut.count_errored_beats.value) <= int(dut.count_flipped_bits.value)
    assert int(dut.count_lost.value) == 0
    assert int(dut.count_uncorrectable_codewords.value) == 0
    assert int(dut.count_corrected_symbols.value) >= int(dut.count_corrected_codewords.value) > 0
    assert int(dut.count_overruns.value) == 0
    dut._log.info("latency %d cycles; %d bits flipped, %d symbols corrected", latency,
                  int(dut.count_flipped_bits.value), int(dut.count_corrected_symbols.value))


@cocotb.test()
async def uncorrectable_becomes_error_words(dut):
    """A 300-bit burst (at least 30 symbols) in the third codeword: its 40 words, and only
    they, become /E/; counted once."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    counter = await setup(dut)
    words = xgmii_stream(rng, 6 * WORDS_PER_MESSAGE)
    dut.burst_length.value = 300

    async def burst_in_third_codeword():
        # The line beats of codeword 2 start after two codewords' worth of words (80 cycles)
        # and the transmitter's latency; a strobe 20 cycles later lands in its middle.
        await ClockCycles(dut.clk, 2 * WORDS_PER_MESSAGE + 20)
        dut.burst.value = 1
        await ClockCycles(dut.clk, 1)
        dut.burst.value = 0

    cocotb.start_soon(burst_in_third_codeword())
    got, _, _ = await send_and_collect(dut, counter, words)
    want = [as_received(w) for w in words]
    bad = [n // WORDS_PER_MESSAGE for n, (a, b) in enumerate(zip(got, want)) if a != b]
    assert len(got) == len(want)
    assert set(bad) == {2}, f"words differ in codewords {sorted(set(bad))}"
    third = got[2 * WORDS_PER_MESSAGE:3 * WORDS_PER_MESSAGE]
    assert all(w == ERROR_WORD for w in third), "the uncorrectable codeword is not all /E/"
    assert int(dut.count_uncorrectable_codewords.value) == 1
    assert int(dut.count_rx_unknown_types.value) == 0
    # 300 consecutive bits cover 4 or 5 line beats of 80 bits.
    assert int(dut.count_flipped_bits.value) == 300
    assert int(dut.count_errored_beats.value) in (4, 5)


@cocotb.test()
async def bypass(dut):
    """Bypass: each word is one line beat; the words cross in the channel's delay alone."""
    params = export_params()
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    counter = await setup(dut, bypass=1)
    words = xgmii_stream(rng, 3 * WORDS_PER_MESSAGE, garbage=0.05)
    got, log_in, log_out = await send_and_collect(dut, counter, words)
    # No transcoding: even words that fit no type cross unchanged.
    assert got == words
    assert log_out.transfers[0][0] - log_in.transfers[0][0] == params["delay"]
    assert log_in.stalls == 0
    assert int(dut.count_corrected_codewords.value) == 0
    assert int(dut.count_tx_error_words.value) == 0


@pytest.mark.parametrize("delay", [4])
def test_fec_sublayer(delay, tmp_path):
    run_cocotb(EXPORT, "test_fec_sublayer", {"symbols_per_beat": 8, "delay": delay},
               test_dir=tmp_path)
