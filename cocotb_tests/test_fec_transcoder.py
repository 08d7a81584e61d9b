"""XgmiiToSymbols and SymbolsToXgmii (the FEC sublayer's transcoder) against the golden model
(sim/models/transcode.py).

TX: realistic XGMII traffic (frames of every length, so /T/ in every lane, LCWs inside and
between frames, idles) and words that fit no type, with random idles and back-pressure: every
message equals the model's, symbol for symbol. RX: the model's messages, some uncorrectable,
some with unused type codes or an invalid block header: every word equals the model's, and
the counters agree. Round trip: the TX run's symbols are fed to the RX run, which must give
back the words sent (ERROR words as /E/). Then latency and full rate without idles.

Both exports are built per parameter set; the pytest function runs the TX tests on
``fec_xgmii_to_symbols``, then the RX tests on ``fec_symbols_to_xgmii``, handing the round-trip
symbols over in a file.
"""

import json
import os
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from ethlink.rtl.phy.fec.symbols import beats_for
from ethlink.rtl.wire import FecWordType
from ethlink.sim.models.transcode import (
    BLOCK_BITS, IDLE_WORD, MESSAGE_SYMBOLS, WORDS_PER_MESSAGE, XgmiiWord, as_received, classify,
    decode_symbols, encode_words, frame_words, garbage_word, lcw_word, type_offset, with_bits,
    xgmii_stream,
)
from ethlink.sim.models import llr_ack
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import StreamChecker, TransferLog, pauses, start, wait_idle

EXPORT_TX = "fec_xgmii_to_symbols"
EXPORT_RX = "fec_symbols_to_xgmii"
TX_TESTS = ["tx_random_traffic", "tx_round_trip", "tx_latency_and_full_rate"]
RX_TESTS = ["rx_random_messages", "rx_round_trip", "rx_latency_and_full_rate",
            "rx_misplaced_tlast"]
#: The file the TX run writes the round-trip words and symbols to, for the RX run.
ROUND_TRIP_ENV = "FEC_ROUND_TRIP_FILE"

#: Stated latencies (docstrings of XgmiiToSymbols and SymbolsToXgmii), in cycles.
TX_FIRST_LATENCY = 6          # first word of a message -> its first beat, from idle
TX_BLOCK_TO_BEAT = 3          # the word completing a block -> a beat carrying it
RX_BLOCK_TO_WORD = 3          # the beat completing a block -> its first word


def stream_pair(dut, rng=None, idle=0.0, backpressure=0.0):
    """Source on ``s_axis`` and sink on ``m_axis``: symbol streams have 10-bit "bytes", XGMII
    streams 8 lanes with ``ctrl`` on ``tuser``."""
    models = []
    for cls, prefix, fraction in ((AxiStreamSource, "s_axis", idle),
                                  (AxiStreamSink, "m_axis", backpressure)):
        bus = AxiStreamBus.from_prefix(dut, prefix)
        model = cls(bus, dut.clk, dut.rst, byte_size=10 if hasattr(bus, "tlast") else 8)
        model.log.setLevel("WARNING")
        if rng is not None:
            model.set_pause_generator(pauses(rng, fraction))
        models.append(model)
    return models


def words_frame(words):
    """The words as one source frame: eight octets and eight copies of ``ctrl`` each (the
    source puts a beat's last ``tuser`` entry on the bus)."""
    return AxiStreamFrame(b"".join(w.data.to_bytes(8, "little") for w in words),
                          tuser=[w.ctrl for w in words for _ in range(8)])


def received_word(frame):
    ctrl = frame.tuser if isinstance(frame.tuser, int) else frame.tuser[0]
    return XgmiiWord(int.from_bytes(bytes(frame.tdata), "little"), ctrl)


def message_frame(symbols, uncorrectable=False):
    """A message as a source frame: tuser = the decoder status (bit 0 = uncorrectable)."""
    return AxiStreamFrame(list(symbols), tuser=int(uncorrectable))


def check_message(got, words, n):
    symbols = list(got.tdata)
    want = encode_words(words)
    difference = next((i for i, (a, b) in enumerate(zip(symbols, want, strict=False))
                       if a != b), None)
    assert symbols[:MESSAGE_SYMBOLS] == want, \
        f"message {n}: {len(symbols)} symbols, first difference at symbol {difference}"
    assert not any(symbols[MESSAGE_SYMBOLS:]), f"message {n}: padding symbols are not zero"


def coverage_words(rng):
    """Frames of 0…16 octets (/T/ in every lane, twice), an LCW inside a frame, and every
    kind of word that fits no type, padded to whole messages."""
    words = []
    for length in range(17):
        words += frame_words(rng.randbytes(length), seq=length) + [IDLE_WORD] * 2
    body = frame_words(rng.randbytes(21))
    words += body[:2] + [lcw_word(llr_ack(0x12345))] + body[2:] + [IDLE_WORD] * 2
    words += [garbage_word(rng) for _ in range(12)]
    return words + [IDLE_WORD] * (-len(words) % WORDS_PER_MESSAGE)


def traffic(rng, messages):
    words = coverage_words(rng)
    words += xgmii_stream(rng, messages * WORDS_PER_MESSAGE - len(words), lcw=0.08,
                          garbage=0.03)
    kinds = {classify(w) for w in words}
    assert kinds >= set(FecWordType) | {None}, f"traffic lacks {set(FecWordType) - kinds}"
    return words


# --- TX -----------------------------------------------------------------------------------------

async def run_tx(dut, rng, words, idle, backpressure):
    """Send ``words`` through the TX with idles and back-pressure; returns the messages."""
    source, sink = stream_pair(dut, rng, idle, backpressure)
    checker = StreamChecker(dut, "m_axis")
    await source.send(words_frame(words))
    count = len(words) // WORDS_PER_MESSAGE
    await wait_idle(dut, [source], [(sink, count)])
    messages = [await sink.recv() for _ in range(count)]
    checker.assert_clean()
    return messages


@cocotb.test()
async def tx_random_traffic(dut):
    """Realistic traffic with words that fit no type, random idles and back-pressure: every
    message equals the model's, and the ERROR words are counted."""
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut)
    words = traffic(rng, 14)
    messages = await run_tx(dut, rng, words, idle=0.3, backpressure=0.3)
    for n, got in enumerate(messages):
        check_message(got, words[WORDS_PER_MESSAGE * n:][:WORDS_PER_MESSAGE], n)
    errors = sum(classify(w) == FecWordType.ERROR for w in words)
    assert int(dut.count_error_words.value) == errors


@cocotb.test()
async def tx_round_trip(dut):
    """First half of the round trip: random traffic through the TX; the words and the
    symbols go to the file the RX run reads (see ``rx_round_trip``)."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    await start(dut)
    words = traffic(rng, 10)
    messages = await run_tx(dut, rng, words, idle=0.2, backpressure=0.4)
    record = {"words": [list(w) for w in words],
              "messages": [list(m.tdata)[:MESSAGE_SYMBOLS] for m in messages]}
    with open(os.environ[ROUND_TRIP_ENV], "w") as file:
        json.dump(record, file)


@cocotb.test()
async def tx_latency_and_full_rate(dut):
    """No idles, no back-pressure: first beat 6 cycles after the first word; at P ≥ 7 one word
    per cycle throughout and each message's last beat 3 + n cycles after its last word; at
    P < 7 one beat per cycle throughout."""
    per_beat = export_params()["symbols_per_beat"]
    beats = beats_for(MESSAGE_SYMBOLS, per_beat)
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    counter = await start(dut)
    source, sink = stream_pair(dut)
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    count = 6
    words = xgmii_stream(rng, count * WORDS_PER_MESSAGE)[:count * WORDS_PER_MESSAGE]
    await source.send(words_frame(words))
    await wait_idle(dut, [source], [(sink, count)])
    for n in range(count):
        check_message(await sink.recv(), words[WORDS_PER_MESSAGE * n:][:WORDS_PER_MESSAGE], n)

    word_cycles = [cycle for cycle, _ in log_in.transfers]
    beat_cycles = [cycle for cycle, _ in log_out.transfers]
    assert len(beat_cycles) == count * beats
    latency = beat_cycles[0] - word_cycles[0]
    assert latency == TX_FIRST_LATENCY, f"first beat {latency} cycles after the first word"
    if per_beat >= 7:
        assert word_cycles == list(range(word_cycles[0], word_cycles[0] + len(words))), \
            f"{len(words)} words took {word_cycles[-1] - word_cycles[0] + 1} cycles"
        # The beats from the first one carrying block 9 (bit 2313) wait for the message's last
        # word; they then leave one per cycle.
        tail = beats - 1 - (9 * BLOCK_BITS) // (10 * per_beat)
        last_beats = [cycle for cycle, last in log_out.transfers if last]
        for n, cycle in enumerate(last_beats):
            last_word = word_cycles[WORDS_PER_MESSAGE * (n + 1) - 1]
            assert cycle - last_word == TX_BLOCK_TO_BEAT + tail, \
                f"message {n}: last beat {cycle - last_word} cycles after its last word"
    else:
        assert beat_cycles == list(range(beat_cycles[0], beat_cycles[0] + len(beat_cycles))), \
            f"{len(beat_cycles)} beats took {beat_cycles[-1] - beat_cycles[0] + 1} cycles"


# --- RX -----------------------------------------------------------------------------------------

def damaged_messages(rng, words):
    """``[(symbols, uncorrectable)]`` of the messages of ``words``: intact, uncorrectable,
    with unused type codes in some control words, or with an invalid block header."""
    messages = []
    for n in range(len(words) // WORDS_PER_MESSAGE):
        message = words[WORDS_PER_MESSAGE * n:][:WORDS_PER_MESSAGE]
        symbols = encode_words(message)
        kind = n % 4
        if kind == 1:
            controls = [i for i, w in enumerate(message) if classify(w) is not None]
            for i in rng.sample(controls, min(3, len(controls))):
                symbols = with_bits(symbols, type_offset(message, i), rng.randrange(0xB, 0xF), 4)
        elif kind == 2:
            # Bit 0 = 0 with all four flags set: no room for four DATA words.
            symbols = with_bits(symbols, BLOCK_BITS * rng.randrange(10), 0b11110, 5)
        messages.append((symbols, kind == 3))
    return messages


async def run_rx(dut, rng, messages, idle, backpressure):
    """Send ``[(symbols, uncorrectable)]`` through the RX; returns the words."""
    source, sink = stream_pair(dut, rng, idle, backpressure)
    checker = StreamChecker(dut, "m_axis")
    for symbols, uncorrectable in messages:
        await source.send(message_frame(symbols, uncorrectable))
    count = len(messages) * WORDS_PER_MESSAGE
    await wait_idle(dut, [source], [(sink, count)])
    words = [received_word(await sink.recv()) for _ in range(count)]
    checker.assert_clean()
    return words


@cocotb.test()
async def rx_random_messages(dut):
    """The model's messages, some damaged, with random idles and back-pressure: every word
    equals the model's; unknown types, uncorrectable codewords and framing are counted."""
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    await start(dut)
    messages = damaged_messages(rng, traffic(rng, 16))
    got = await run_rx(dut, rng, messages, idle=0.3, backpressure=0.3)
    unknown = 0
    for n, (symbols, uncorrectable) in enumerate(messages):
        want, bad = decode_symbols(symbols, uncorrectable)
        unknown += bad
        for w, (a, b) in enumerate(zip(got[WORDS_PER_MESSAGE * n:], want, strict=False)):
            assert a == b, f"message {n} word {w}: got {a}, expected {b}"
    assert int(dut.count_unknown_types.value) == unknown
    assert int(dut.count_uncorrectable.value) == sum(u for _, u in messages)
    assert int(dut.count_framing_errors.value) == 0
    assert unknown > 0


@cocotb.test()
async def rx_round_trip(dut):
    """Second half of the round trip: the TX run's symbols give back the words it was sent,
    ERROR words as /E/."""
    rng = random.Random(cocotb.RANDOM_SEED + 4)
    await start(dut)
    with open(os.environ[ROUND_TRIP_ENV]) as file:
        record = json.load(file)
    sent = [XgmiiWord(*w) for w in record["words"]]
    got = await run_rx(dut, rng, [(m, False) for m in record["messages"]], idle=0.4,
                       backpressure=0.2)
    want = [as_received(w) for w in sent]
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a == b, f"word {i}: got {a}, expected {b} (sent {sent[i]})"
    assert int(dut.count_unknown_types.value) == 0


@cocotb.test()
async def rx_latency_and_full_rate(dut):
    """No idles, no back-pressure: first word 3 + floor(256/(10P)) cycles after the first
    beat; at P ≥ 7 one word per cycle throughout, at P < 7 one beat per cycle throughout."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 5)
    counter = await start(dut)
    source, sink = stream_pair(dut)
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    count = 6
    words = xgmii_stream(rng, count * WORDS_PER_MESSAGE)[:count * WORDS_PER_MESSAGE]
    for n in range(count):
        await source.send(message_frame(encode_words(words[WORDS_PER_MESSAGE * n:]
                                                     [:WORDS_PER_MESSAGE])))
    await wait_idle(dut, [source], [(sink, len(words))])
    got = [received_word(await sink.recv()) for _ in range(len(words))]
    assert got == words

    beat_cycles = [cycle for cycle, _ in log_in.transfers]
    word_cycles = [cycle for cycle, _ in log_out.transfers]
    latency = word_cycles[0] - beat_cycles[0]
    expected = RX_BLOCK_TO_WORD + 256 // (10 * per_beat)
    assert latency == expected, f"first word {latency} cycles after the first beat, " \
        f"expected {expected}"
    if per_beat >= 7:
        assert word_cycles == list(range(word_cycles[0], word_cycles[0] + len(words))), \
            f"{len(words)} words took {word_cycles[-1] - word_cycles[0] + 1} cycles"
    else:
        assert beat_cycles == list(range(beat_cycles[0], beat_cycles[0] + len(beat_cycles))), \
            f"{len(beat_cycles)} beats took {beat_cycles[-1] - beat_cycles[0] + 1} cycles"


@cocotb.test()
async def rx_misplaced_tlast(dut):
    """A message with tlast one beat early is counted and changes nothing: the RX frames
    messages by counting beats, so both messages come out right."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 6)
    await start(dut)
    source, sink = stream_pair(dut)
    beats = beats_for(MESSAGE_SYMBOLS, per_beat)
    words = xgmii_stream(rng, 2 * WORDS_PER_MESSAGE)[:2 * WORDS_PER_MESSAGE]
    first = encode_words(words[:WORDS_PER_MESSAGE])
    # tlast on the second-to-last beat, then the last beat as a frame of its own.
    await source.send(AxiStreamFrame(first[:(beats - 1) * per_beat]))
    await source.send(AxiStreamFrame(first[(beats - 1) * per_beat:]))
    await source.send(message_frame(encode_words(words[WORDS_PER_MESSAGE:])))
    await wait_idle(dut, [source], [(sink, len(words))])
    await ClockCycles(dut.clk, 2)
    assert int(dut.count_framing_errors.value) == 1
    assert sink.count() == len(words)
    assert [received_word(await sink.recv()) for _ in range(len(words))] == words


@pytest.mark.parametrize("symbols_per_beat", [1, 8])
def test_fec_transcoder(symbols_per_beat, tmp_path):
    params = {"symbols_per_beat": symbols_per_beat}
    env = {ROUND_TRIP_ENV: str(tmp_path / "round_trip.json")}
    run_cocotb(EXPORT_TX, "test_fec_transcoder", params, testcase=TX_TESTS,
               test_dir=tmp_path / "tx", extra_env=env)
    run_cocotb(EXPORT_RX, "test_fec_transcoder", params, testcase=RX_TESTS,
               test_dir=tmp_path / "rx", extra_env=env)
