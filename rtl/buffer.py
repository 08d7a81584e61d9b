"""Frame buffers in block RAM, shared by the blocks that hold whole frames of the 8-octet
datapath: the LLR's replay and receive buffers, CBFC's queues, the switch's VOQs.

* :class:`FrameWordLayout` — a stored beat with its ``keep`` mask (73 bits), for buffers read
  straight back onto a packet stream (:func:`read_committed`);
* :class:`CountedWordLayout` — a stored beat with ``keep`` as a count (69 bits, so one word
  fits a 72-bit block RAM row), for the switch's queues, whose RAM is the largest of all;
* :data:`MAX_FRAME_WORDS`, and the sizes a buffer may have (:data:`FRAME_BUFFER_OCTETS`,
  :data:`FRAME_QUEUE_OCTETS`).
"""

from amaranth.hdl import Mux, Signal
from amaranth.lib import data
from amaranth.hdl import unsigned

from .params import Param, PowerOfTwo
from .wire import MAX_BODY_OCTETS

__all__ = ["BEAT_OCTETS", "MAX_FRAME_WORDS", "FrameWordLayout", "CountedWordLayout",
           "read_committed", "FRAME_BUFFER_OCTETS", "FRAME_QUEUE_OCTETS", "MIN_QUEUE_OCTETS"]

#: Octets of a stored word: the link layer's beat, one XGMII word of frame octets.
BEAT_OCTETS = 8
#: Words of the longest frame body (spec §3: 2048 + 22 octets).
MAX_FRAME_WORDS = -(-MAX_BODY_OCTETS // BEAT_OCTETS)
#: The smallest frame queue: the power of two of octets above a longest frame.
MIN_QUEUE_OCTETS = 1 << (MAX_FRAME_WORDS * BEAT_OCTETS).bit_length()

#: A buffer that holds at least two longest frames (the LLR's: one being sent or received
#: while the other waits).
FRAME_BUFFER_OCTETS = Param("frame buffer in octets (at least two longest frames)",
                            PowerOfTwo(2 * MIN_QUEUE_OCTETS, 1 << 20))
#: A queue that holds at least one longest frame (CBFC's per-VC queues and buffers).
FRAME_QUEUE_OCTETS = Param("frame queue in octets (at least one longest frame)",
                           PowerOfTwo(MIN_QUEUE_OCTETS, 1 << 20))


class FrameWordLayout(data.StructLayout):
    """One stored word of a frame: 8 body octets, ``keep`` and ``last``."""
    def __init__(self):
        super().__init__({"data": unsigned(8 * BEAT_OCTETS), "keep": unsigned(BEAT_OCTETS),
                          "last": unsigned(1)})


class CountedWordLayout(data.StructLayout):
    """One stored word of a frame with its valid octets as a count (lane 0 up), and the
    frame's last-word flag: 69 bits, one 72-bit block RAM row."""
    def __init__(self):
        super().__init__({"data": unsigned(8 * BEAT_OCTETS),
                          "count": range(BEAT_OCTETS + 1), "last": unsigned(1)})


def read_committed(m, rd, rd_ptr, commit, o, *, abandon=None, restart=None, through=None):
    """Stream the committed words of a frame buffer out on packet stream ``o``.

    ``rd`` is the buffer's (synchronous) read port of :class:`FrameWordLayout` words,
    ``rd_ptr`` the read pointer (one bit wider than the address) and ``commit`` the end of the
    committed words. One output register holds the word read; a word is read whenever that
    register is empty or being taken, so ``o`` carries one beat per cycle while words are
    committed and ``ready`` is high. ``first`` is rebuilt from ``last``.

    ``through`` — ``(strobe, word)``, the :class:`FrameWordLayout` word being written in this
    cycle at ``commit`` — lets a buffer whose every written word is committed (cut-through)
    take that word straight into the output register when the reader has caught up with the
    writer: the word is offered the cycle after it was written instead of two (the read
    pointer moves past it as if it had been read).

    ``abandon`` (a strobe; ``o`` then carries a verdict,
    :class:`~ethlink.rtl.stream.VerdictPacketLayout`) gives up the frame being read, for a
    buffer that passes a frame on before it is judged: the read pointer goes back to
    ``restart``, no word is read until the frame has been ended on ``o`` by a beat with
    ``last``, ``keep = 0`` and ``user.error`` (after the word already in the output register,
    if any: an offered beat is never changed). Returns the strobe of a good frame's last beat
    leaving."""
    out_valid = Signal()
    out_first = Signal(init=1)
    ending = Signal()                  # an abandoned frame's closing beat is (to be) offered
    stop = ending if abandon is None else ending | abandon
    advance = ~out_valid | o.ready
    read = advance & (rd_ptr != commit) & ~stop
    m.d.comb += [rd.addr.eq(rd_ptr[:len(rd.addr)]), rd.en.eq(advance)]
    word = rd.data
    if through is not None:
        strobe, written = through
        caught = Signal()              # the word being written goes straight out
        held = Signal(FrameWordLayout())
        from_held = Signal()
        m.d.comb += caught.eq(advance & strobe & (rd_ptr == commit) & ~stop)
        # ``held`` takes the word being written whenever the output register moves, caught or
        # not (``from_held`` says which of them is used), so that its enable does not wait
        # for the pointer compare.
        with m.If(advance):
            m.d.sync += [from_held.eq(caught), held.eq(written)]
        word = Signal(FrameWordLayout())
        m.d.comb += word.eq(Mux(from_held, held, rd.data))
        read = read | caught
    with m.If(advance):
        m.d.sync += out_valid.eq(read)
    with m.If(read):
        m.d.sync += rd_ptr.eq(rd_ptr + 1)
    taken = o.valid & o.ready
    with m.If(taken):
        m.d.sync += out_first.eq(o.payload.last)
    m.d.comb += [
        o.valid.eq(out_valid | ending),
        o.payload.data.eq(word.data),
        o.payload.keep.eq(word.keep),
        o.payload.last.eq(word.last),
        o.payload.first.eq(out_first),
    ]
    if abandon is None:
        return taken & o.payload.last
    with m.If(abandon):
        m.d.sync += [rd_ptr.eq(restart), ending.eq(1)]
    with m.If(~out_valid & ending):
        m.d.comb += [o.payload.keep.eq(0), o.payload.last.eq(1), o.payload.user.error.eq(1)]
        with m.If(o.ready):
            m.d.sync += ending.eq(0)
    return taken & o.payload.last & ~o.payload.user.error
