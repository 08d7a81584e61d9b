"""Golden model of the EthLink MAC's XGMII mapping (spec §5), independent of the RTL.

Encoding: :func:`encode_frame` gives the octets after ``/S/`` of one frame (preamble with the
Q octets, body, FCS); :func:`xgmii_words` lays frames and LCWs out as XGMII words with the
inter-frame gap rules (``/S/`` in lane 0 only, at least ``ifg`` octets from ``/T/`` inclusive to
the next ``/S/``, LCWs between frames). Decoding: :func:`decode_xgmii` is a receiver written
from the spec: it returns what a MAC receiver reports — frames (body, seq, class, error cause)
and LCWs (type, payload, crc_ok) — and its counters.

Receiver rules (the contract of ``MacRx``, docs/mac.md):

* a frame starts on a word with ``/S/`` in lane 0, lanes 1…7 data, ``55 55`` in lanes 1–2 and
  the SFD in lane 7; any other word with ``/S/`` (in any lane) is a bad start and the words up
  to the next control word are ignored;
* class 0x5 in Q1 opens an unsequenced frame (C not checked); any other class opens a
  sequenced frame (seq from Q1…Q3), which fails its start check (v1.1) unless the class is
  0xE and C = CRC-8(Q1 Q2 Q3) — it is then received to its end and bad like an FCS error
  (``start_check_errors``), so the LLR never trusts its seq;
* inside a frame, an LCW word (0x5C in lane 0, control only in lane 0) is taken out and the
  frame continues; all-data words are frame octets; a ``/T/`` word (data lanes, ``/T/``, then
  ``/I/``) ends the frame; a word with ``/E/`` ends it as ``error_chars``; any other word ends
  it as ``truncated`` (and is then looked at as a word between frames, so a new ``/S/`` starts
  the next frame);
* a frame ended by ``/T/`` is a ``runt`` with fewer than 4 octets, ``too_long`` with more than
  ``max_body_octets`` body octets (decided as soon as the count is exceeded; the rest of it up
  to the next control word is ignored), else ``start_check_errors`` if its start check
  failed, else ``void_frames`` if its FCS is exactly the inverse of the right one (a void
  frame, spec v1.1 §7: dropped, not an FCS error), else ``fcs`` if its FCS fails, else good.
"""

import math
from dataclasses import dataclass

from ...rtl.wire import MAX_BODY_OCTETS, PREAMBLE_OCTET, SFD, FrameClass, XgmiiControl
from .frame import FCS_OCTETS, fcs
from .lcw import decode_lcw, encode_lcw, start_check
from .transcode import IDLE_WORD, XgmiiWord

__all__ = [
    "MacFrame", "MacLcw", "RxFrame", "RxLcw", "RX_COUNTERS", "ABORT_WORD",
    "preamble", "void_fcs", "encode_frame", "frame_words", "frame_word_count", "gap_words",
    "lcw_word", "xgmii_words", "decode_xgmii", "gaps",
]

S, T, E, I, LCW = (XgmiiControl.START, XgmiiControl.TERMINATE, XgmiiControl.ERROR,
                   XgmiiControl.IDLE, XgmiiControl.LCW)
SEQ_MASK = (1 << 20) - 1

#: Counter names of the receiver, as the RTL exports them (``count_<name>``).
RX_COUNTERS = ("frames", "octets", "bad_starts", "start_check_errors", "fcs_errors",
               "void_frames", "error_chars", "truncated", "too_long", "runts", "lcws", "lcw_crc_errors")

#: The word that ends a frame early: /E/ in lane 0, /T/ in lane 1, /I/ after (all control).
ABORT_WORD = XgmiiWord.from_lanes([(E, 1), (T, 1)] + [(I, 1)] * 6)


@dataclass(frozen=True)
class MacFrame:
    """A frame to send: ``body`` (OEFH+TH+payload), ``seq`` (``None``: unsequenced), ``void``
    (ended with the inverse of its FCS, spec v1.1 §7)."""
    body: bytes
    seq: int | None = None
    void: bool = False


@dataclass(frozen=True)
class MacLcw:
    """A link control word to send or received."""
    type: int
    payload: int


@dataclass(frozen=True)
class RxFrame:
    """A received frame: the data octets it carried (FCS stripped when it ended with /T/),
    its class and seq, and ``error`` (the counter name of the cause, ``None`` when good)."""
    body: bytes
    seq: int
    sequenced: bool
    error: str | None = None


@dataclass(frozen=True)
class RxLcw:
    type: int
    payload: int
    crc_ok: bool


def preamble(seq=None):
    """The seven octets after /S/: ``P P C Q1 Q2 Q3 SFD``."""
    # Ref: spec §5 — Q1 = {class, seq[19:16]}, Q2 = seq[15:8], Q3 = seq[7:0]; C = CRC-8 of
    # Q1..Q3 (v1.1); class 0x5 (unsequenced, C = 0x55) reads as a plain Ethernet preamble.
    if seq is None:
        q = [PREAMBLE_OCTET] * 3
        check = PREAMBLE_OCTET
    else:
        q = [(FrameClass.SEQUENCED << 4) | (seq >> 16 & 0xF), seq >> 8 & 0xFF, seq & 0xFF]
        check = start_check(bytes(q))
    return bytes([PREAMBLE_OCTET] * 2 + [check] + q + [SFD])


def void_fcs(body):
    """The FCS octets a void frame of ``body`` ends with: the right ones, inverted."""
    return bytes(o ^ 0xFF for o in fcs(body))


def encode_frame(body, seq=None, void=False):
    """Octets after /S/ of one frame: preamble (with the Q octets), body, FCS (inverted for a
    ``void`` frame, spec v1.1 §7)."""
    return preamble(seq) + bytes(body) + (void_fcs(body) if void else fcs(body))


def frame_word_count(body_octets):
    """Words of a frame from its /S/ word up to and including its /T/ word."""
    return 1 + math.ceil((body_octets + FCS_OCTETS + 1) / 8)


def gap_words(t_lane, ifg):
    """Words needed between the word with /T/ in lane ``t_lane`` and the next /S/ word so that
    at least ``ifg`` octets lie from /T/ (inclusive) to /S/ (exclusive)."""
    return max(0, math.ceil((ifg - (8 - t_lane)) / 8))


def lcw_word(lcw_type, payload):
    return XgmiiWord.from_lanes([(LCW, 1)] + [(o, 0) for o in encode_lcw(lcw_type, payload)])


def frame_words(body, seq=None, void=False):
    """The words of one frame, /S/ word to /T/ word; returns ``(words, t_lane)``."""
    octets = [(S, 1)] + [(o, 0) for o in encode_frame(body, seq, void)] + [(T, 1)]
    t_lane = (len(octets) - 1) % 8
    octets += [(I, 1)] * (-len(octets) % 8)
    return [XgmiiWord.from_lanes(octets[i:i + 8]) for i in range(0, len(octets), 8)], t_lane


def xgmii_words(items, ifg=12):
    """XGMII words of ``items`` (:class:`MacFrame` and :class:`MacLcw`) sent back to back with
    the smallest legal gaps; LCWs go between frames and count towards the gap."""
    words = []
    gap_left = 0
    for item in items:
        if isinstance(item, MacLcw):
            words.append(lcw_word(item.type, item.payload))
            gap_left = max(0, gap_left - 1)
            continue
        words += [IDLE_WORD] * gap_left
        fw, t_lane = frame_words(item.body, item.seq, item.void)
        words += fw
        gap_left = gap_words(t_lane, ifg)
    return words


def gaps(words):
    """Octets from each /T/ (inclusive) to the next /S/ (exclusive), one per /S/ after the
    first frame's end; raises ``AssertionError`` on an /S/ outside lane 0."""
    result, since_t = [], None
    for word in words:
        for lane, (octet, ctrl) in enumerate(word.lanes()):
            if ctrl and octet == S:
                assert lane == 0, f"/S/ in lane {lane}"
                if since_t is not None:
                    result.append(since_t)
                since_t = None
            elif ctrl and octet == T:
                since_t = 1
            elif since_t is not None:
                since_t += 1
    return result


def _lanes(word):
    return [((word.data >> 8 * i) & 0xFF, (word.ctrl >> i) & 1) for i in range(8)]


def _start(lanes):
    """``(seq, sequenced, check_ok)`` of a start word, else ``None`` (a bad start)."""
    if [c for _, c in lanes] != [1] + [0] * 7 or lanes[0][0] != S:
        return None
    o = [d for d, _ in lanes]
    if o[1:3] != [PREAMBLE_OCTET] * 2 or o[7] != SFD:
        return None
    q = o[4:7]
    if q[0] >> 4 == FrameClass.UNSEQUENCED:
        return 0, False, True
    # Ref: spec v1.1 §5 — any other class belongs to the LLR; the frame is good only as class
    # 0xE with C = CRC-8(Q1..Q3), else it is bad like one with a bad FCS.
    seq = ((q[0] & 0xF) << 16) | (q[1] << 8) | q[2]
    return seq, True, q[0] >> 4 == FrameClass.SEQUENCED and o[3] == start_check(bytes(q))


def _term_lane(lanes):
    """Lane of /T/ of a well-formed terminate word, else ``None``."""
    for t, (d, c) in enumerate(lanes):
        if c:
            if d != T or any(dd != I or not cc for dd, cc in lanes[t + 1:]):
                return None
            return t
    return None


def decode_xgmii(words, max_body_octets=MAX_BODY_OCTETS):
    """Receive ``words``: returns ``(events, counters)``; ``events`` lists :class:`RxFrame`
    and :class:`RxLcw` in order of their end on the line, ``counters`` maps each name of
    :data:`RX_COUNTERS` to its count."""
    events = []
    counters = dict.fromkeys(RX_COUNTERS, 0)
    state = "idle"            # idle, frame, drop
    octets = bytearray()
    seq = sequenced = None
    check_ok = True

    def end(cause):
        body = bytes(octets[:-FCS_OCTETS]) \
            if cause in (None, "fcs", "too_long", "start_check_errors", "void_frames") \
            and len(octets) >= FCS_OCTETS else bytes(octets)
        if cause is None:
            counters["frames"] += 1
            counters["octets"] += len(body)
        else:
            counters[{"fcs": "fcs_errors"}.get(cause, cause)] += 1
        events.append(RxFrame(body, seq, sequenced, cause))

    for word in words:
        lanes = _lanes(word)
        ctrl = [c for _, c in lanes]
        is_lcw = lanes[0] == (LCW, 1) and ctrl[1:] == [0] * 7
        if is_lcw:
            # Ref: spec §5 — LCWs between frames or between two words of a frame.
            lcw_type, payload, crc_ok = decode_lcw(bytes(d for d, _ in lanes[1:]))
            events.append(RxLcw(int(lcw_type), payload, crc_ok))
            counters["lcws" if crc_ok else "lcw_crc_errors"] += 1
            continue
        if state == "frame":
            if not any(ctrl):
                octets.extend(d for d, _ in lanes)
                if len(octets) - FCS_OCTETS > max_body_octets:
                    end("too_long")
                    state = "drop"
                continue
            t_lane = _term_lane(lanes)
            if any(c and d == E for d, c in lanes):
                end("error_chars")
            elif t_lane is not None:
                octets.extend(d for d, _ in lanes[:t_lane])
                if len(octets) < FCS_OCTETS:
                    end("runts")
                elif len(octets) - FCS_OCTETS > max_body_octets:
                    end("too_long")
                elif not check_ok:
                    end("start_check_errors")
                elif bytes(octets[-FCS_OCTETS:]) == void_fcs(octets[:-FCS_OCTETS]):
                    end("void_frames")
                elif bytes(octets[-FCS_OCTETS:]) != fcs(octets[:-FCS_OCTETS]):
                    end("fcs")
                else:
                    end(None)
                state = "idle"
                continue
            else:
                end("truncated")
            state = "idle"
            # The word that ended the frame is looked at again as a word between frames.
        if any(c and d == S for d, c in lanes):
            start = _start(lanes)
            if start is None:
                counters["bad_starts"] += 1
                state = "drop"
            else:
                seq, sequenced, check_ok = start
                octets = bytearray()
                state = "frame"
        elif state == "drop" and any(ctrl):
            state = "idle"
    return events, counters
