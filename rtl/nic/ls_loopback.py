"""Two NICs' engine halves back to back: the requester of one talks to the target of the
other over a frame path that can lose requests — the bench and test tops of the L/S and RDMA
engines.

Ref: spec §4.2, §11.
"""

from amaranth.hdl import Module, Signal, Cat, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hierarchy import forward_member
from .ls_requester import LsRequester
from .ls_responder import LsTarget
from .rdma_requester import RdmaRequester
from .rdma_target import RdmaTarget

__all__ = ["EngineLoopback", "LsLoopback", "RdmaLoopback"]


class EngineLoopback(wiring.Component):
    """``requester`` → (drop) → ``target`` → ``requester``.

    Request frames whose OEFH dst equals ``drop_dst`` are discarded on the way, as a lost
    frame would be: their operations must complete with TIMEOUT. ``tap_req_*`` and
    ``tap_rsp_*`` show the request and response frame streams (valid, ready, first, last) for
    latency measurement. A requester's ``fail`` input is left idle (nothing is unroutable
    here). Every other member is the requester's (its ``m_axi_*`` renamed
    ``{requester_axi}_*`` when ``requester_axi`` is given) or the target's (``count_*``
    prefixed ``target_``).
    """
    def __init__(self, requester, target, requester_axi=None):
        self._requester = requester
        self._target = target
        self._names = {}
        members = {}
        for name, member in requester.signature.members.items():
            if name not in ("o", "i", "fail"):
                ours = name
                if requester_axi and name.startswith("m_axi_"):
                    ours = requester_axi + name[len("m_axi"):]
                self._names[name] = ours
                members[ours] = member
        for name, member in target.signature.members.items():
            if name in ("o", "i"):
                continue
            members[f"target_{name}" if name.startswith("count_") else name] = member
        members["drop_dst"] = In(12)
        members["count_dropped"] = Out(32)
        for tap in ("tap_req", "tap_rsp"):
            for field in ("valid", "ready", "first", "last"):
                members[f"{tap}_{field}"] = Out(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.requester = req = self._requester
        m.submodules.target = tgt = self._target
        for name, member in req.signature.members.items():
            if name in ("o", "i", "fail"):
                continue
            forward_member(m, getattr(self, self._names[name]), getattr(req, name), member)
        for name, member in tgt.signature.members.items():
            if name in ("o", "i"):
                continue
            forward_member(m, getattr(self, f"target_{name}" if name.startswith("count_")
                                      else name), getattr(tgt, name), member)

        # The lossy request path: a frame is dropped whole, decided on its first beat.
        beat = req.o.payload
        dropping = Signal()
        drop_now = Signal()
        # Ref: spec §4.1 — dst is H[39:28]: octet 1 and the high nibble of octet 2.
        dst = Cat(beat.data[20:24], beat.data[8:16])
        m.d.comb += drop_now.eq(Mux(beat.first, dst == self.drop_dst, dropping))
        m.d.comb += [
            tgt.i.payload.eq(beat),
            tgt.i.valid.eq(req.o.valid & ~drop_now),
            req.o.ready.eq(tgt.i.ready | drop_now),
        ]
        with m.If(req.o.valid & req.o.ready):
            m.d.sync += dropping.eq(drop_now & ~beat.last)
        dropped = Signal(32)
        m.d.comb += self.count_dropped.eq(dropped)
        with m.If(req.o.valid & req.o.ready & beat.first & drop_now):
            m.d.sync += dropped.eq(dropped + 1)
        wiring.connect(m, tgt.o, req.i)
        for tap, port in (("tap_req", req.o), ("tap_rsp", tgt.o)):
            for field, value in (("valid", port.valid), ("ready", port.ready),
                                 ("first", port.payload.first), ("last", port.payload.last)):
                m.d.comb += getattr(self, f"{tap}_{field}").eq(value)
        return m


class LsLoopback(EngineLoopback):
    """:class:`LsRequester` → (drop) → :class:`LsTarget` → :class:`LsRequester`: members
    ``req``, ``req_data``, ``cpl``, ``cpl_data``, ``local_id``, ``outstanding``, ``count_*``
    (the requester's), ``m_axi_*``, ``csr_*``, ``target_count_*`` (the target's)."""
    def __init__(self, beat_octets=8, tags=256, timeout_cycles=4096, windows=8,
                 addr_width=32):
        super().__init__(LsRequester(beat_octets, tags, timeout_cycles),
                         LsTarget(beat_octets, windows, addr_width))


class RdmaLoopback(EngineLoopback):
    """:class:`RdmaRequester` → (drop) → :class:`RdmaTarget` → :class:`RdmaRequester`:
    members ``cmd``, ``cpl``, ``local_id``, ``outstanding``, ``count_*`` and ``m_axi_dma_*``
    (the requester's: its local memory), ``m_axi_*``, ``csr_*``, ``target_count_*`` (the
    target's: the remote memory)."""
    def __init__(self, beat_octets=8, messages=16, mtu=1024, timeout_cycles=4096, windows=8,
                 addr_width=32, contexts=8):
        super().__init__(RdmaRequester(beat_octets, messages, mtu, timeout_cycles, addr_width),
                         RdmaTarget(beat_octets, windows, addr_width, mtu, contexts,
                                    timeout_cycles),
                         requester_axi="m_axi_dma")
