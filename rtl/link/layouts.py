"""Beats exchanged by the blocks of the link layer (spec §5, §7).

The link layer of one link end is::

    upper layer ─ i ─▶ LlrTx ─ MacTxFrameLayout ─▶ MacTx ─ txd/txc ─▶ line
    upper layer ◀ o ─ LlrRx ◀ MacRxFrameLayout ─ MacRx ◀ rxd/rxc ─ line
                      LCWs (LcwLayout) go from the LLR/ping units to MacTx and from MacRx back.

Frames inside the link layer are frame bodies (OEFH + TH + payload, spec §4) on 8-octet beats
(:class:`~ethlink.rtl.stream.PacketLayout` ``(8)``, one XGMII word of data per beat); the FCS
exists only on the wire: :class:`MacTx` appends it and :class:`MacRx` checks and strips it.
"""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ..stream import PacketLayout, VerdictPacketLayout
from ..wire import LCW, SEQ_BITS

__all__ = ["MAC_BEAT_OCTETS", "SEQ_BITS", "LCW_PAYLOAD_BITS", "LcwLayout", "LcwStream",
           "LcwEvents", "MacTxUserLayout", "MacRxUserLayout", "MacTxFrameLayout",
           "MacRxFrameLayout", "CutFrameLayout", "CutFrameStream", "VoidableFrameLayout",
           "xgmii_tx", "xgmii_rx"]

#: The MAC's packet side carries one XGMII word of frame octets per beat.
MAC_BEAT_OCTETS = 8
LCW_PAYLOAD_BITS = dict(LCW.fields)["payload"]


class LcwLayout(data.StructLayout):
    """A link control word as the link layer handles it: ``type`` and the 40-bit payload ``P``
    (spec §5). The 0x5C control octet and the crc8 exist only on the wire (:class:`MacTx` adds
    them, :class:`MacRx` checks and strips them)."""
    def __init__(self):
        super().__init__({"type": unsigned(8), "payload": unsigned(LCW_PAYLOAD_BITS)})


def LcwStream():
    """A stream of LCWs to send: held until taken."""
    return stream.Signature(LcwLayout())


def LcwEvents():
    """The LCWs a link end received, each valid for one cycle: every consumer takes them as
    they come (``always_ready``); a unit reads the payload through its type's format, e.g.
    ``CREDIT_PAYLOAD.layout(lcw.payload.payload).credits``."""
    return stream.Signature(LcwLayout(), always_ready=True)


def xgmii_tx():
    """The transmit side of an XGMII port: ``txd`` (lane i in bits 8i+7:8i) and ``txc``."""
    return {"txd": Out(64), "txc": Out(8)}


def xgmii_rx():
    """The receive side of an XGMII port: ``rxd`` and ``rxc``."""
    return {"rxd": In(64), "rxc": In(8)}


def _frame_beat(user):
    beat = PacketLayout(MAC_BEAT_OCTETS)
    return {**{name: field.shape for name, field in beat}, "user": user}


class MacTxUserLayout(data.StructLayout):
    """Per-frame fields for :class:`MacTx`: the start word's, read on the frame's first beat,
    and ``void``, read on its last beat.

    ``sequenced`` selects class 0xE (sequenced; ``seq`` goes into Q1…Q3) or 0x5 (unsequenced;
    C Q1…Q3 = 0x55 0x55 0x55 0x55 as in a plain Ethernet preamble) (spec v1.1 §5). ``void``
    ends the frame with the bitwise inverse of its FCS: a void frame (spec v1.1 §7).
    """
    def __init__(self):
        super().__init__({"seq": unsigned(SEQ_BITS), "sequenced": unsigned(1),
                          "void": unsigned(1)})


class MacRxUserLayout(data.StructLayout):
    """What :class:`MacRx` tells about a received frame.

    ``seq`` and ``sequenced`` (class 0xE) are valid on every beat of the frame. ``error`` is
    valid on the last beat: the frame is bad (FCS error, ``/E/`` or another control character
    inside it, truncated, over-long) and must be discarded; the MAC counts the cause.
    ``void`` is valid on the last beat: the frame is a void frame (ended by ``/T/``, length
    and start check good, FCS exactly the inverse of the right one, spec v1.1 §7); ``error``
    is then high too, so a consumer that knows nothing of void frames drops it.
    """
    def __init__(self):
        super().__init__({"seq": unsigned(SEQ_BITS), "sequenced": unsigned(1),
                          "error": unsigned(1), "void": unsigned(1)})


class MacTxFrameLayout(data.StructLayout):
    """A frame-body beat for :class:`MacTx`: the :class:`~ethlink.rtl.stream.PacketLayout`
    members (8 octets) and ``user`` (:class:`MacTxUserLayout`; ``tuser`` at an export)."""
    def __init__(self):
        super().__init__(_frame_beat(MacTxUserLayout()))


class MacRxFrameLayout(data.StructLayout):
    """A received frame-body beat from :class:`MacRx` (FCS stripped): the
    :class:`~ethlink.rtl.stream.PacketLayout` members and ``user`` (:class:`MacRxUserLayout`)."""
    def __init__(self):
        super().__init__(_frame_beat(MacRxUserLayout()))


class CutFrameLayout(VerdictPacketLayout):
    """A frame-body beat passed on before the frame is judged (spec v1.1 §7, cut-through):
    :class:`~ethlink.rtl.stream.VerdictPacketLayout` of 8 octets."""
    def __init__(self):
        super().__init__(MAC_BEAT_OCTETS)


def CutFrameStream():
    """A stream of :class:`CutFrameLayout` beats that never waits (``always_ready``): the line
    cannot be stopped, so its consumer has room for whatever its credits allowed."""
    return stream.Signature(CutFrameLayout(), always_ready=True)


class VoidableFrameLayout(data.StructLayout):
    """A frame-body beat that may end a void frame: the
    :class:`~ethlink.rtl.stream.PacketLayout` members (8 octets) and ``user.void``, read on
    the last beat (spec v1.1 §7; ``tuser`` at an export). A link end takes a plain packet
    stream and the flag beside it (``i_void``); a harness shows the two as this one stream."""
    def __init__(self):
        super().__init__(_frame_beat(data.StructLayout({"void": unsigned(1)})))
