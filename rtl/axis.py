"""AXI4-Stream port names for exported blocks (spec §12).

Inside the project blocks speak :mod:`amaranth.lib.stream` with the :class:`PacketLayout` beat.
At a Verilog boundary the same streams carry AXI4-Stream names, so that cocotbext-axi and vendor
tools connect without adapters. :class:`AxisExport` wraps a component and renames its ports:

* a packet stream ``NAME`` becomes ``PREFIX_tdata``, ``PREFIX_tkeep``, ``PREFIX_tlast``,
  ``PREFIX_tvalid``, ``PREFIX_tready``. ``first`` is not an AXI4-Stream signal: on an input it
  is derived (the beat after a ``tlast``, or the first beat after reset), on an output it is
  dropped.
* any other stream (a header, for instance) becomes ``PREFIX_tdata``, ``PREFIX_tvalid``,
  ``PREFIX_tready``; its payload value is put on ``tdata`` in lane order (octet 0 of the value's
  big-endian octets in ``tdata[7:0]``), so that a cocotbext-axi source can send the header's wire
  octets as they are.
* every other port keeps its name.

The wrapper adds no register and no latency.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .stream import PacketLayout
from .wire import lanes_to_value

__all__ = ["AxisExport"]


class AxisExport(wiring.Component):
    """Expose ``inner``'s streams under AXI4-Stream names.

    Parameters
    ----------
    inner : wiring.Component
        The block to export.
    prefixes : dict of str to str
        Member name of each stream of ``inner`` → AXI4-Stream prefix (``"s_axis"``,
        ``"m_axis_hdr"``, ...). Every stream member must be named here.
    """
    def __init__(self, inner, prefixes):
        self._inner = inner
        self._streams = {}
        members = {}
        for name, member in inner.signature.members.items():
            if member.is_port:
                members[name] = member
                continue
            sig = member.signature
            if not isinstance(sig, stream.Signature) and not (
                    isinstance(sig, wiring.FlippedSignature)
                    and isinstance(sig.flip(), stream.Signature)):
                raise TypeError(f"member {name!r} of {inner!r} is neither a port nor a stream")
            if name not in prefixes:
                raise ValueError(f"no AXI4-Stream prefix given for stream {name!r}")
            prefix = prefixes[name]
            sink = member.flow == In  # the inner block receives this stream
            fwd, bwd = (In, Out) if sink else (Out, In)
            layout = stream_payload_shape(member)
            is_packet = isinstance(layout, PacketLayout)
            if is_packet:
                members[f"{prefix}_tdata"] = fwd(layout.octets * 8)
                members[f"{prefix}_tkeep"] = fwd(layout.octets)
                members[f"{prefix}_tlast"] = fwd(1)
            else:
                width = layout.size
                if width % 8:
                    raise ValueError(f"stream {name!r} payload is {width} bits, not whole octets")
                members[f"{prefix}_tdata"] = fwd(width)
            members[f"{prefix}_tvalid"] = fwd(1)
            members[f"{prefix}_tready"] = bwd(1)
            self._streams[name] = (prefix, sink, is_packet, layout)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner

        for name, member in inner.signature.members.items():
            if member.is_port:
                ours, theirs = getattr(self, name), getattr(inner, name)
                if member.flow == In:
                    m.d.comb += theirs.eq(ours)
                else:
                    m.d.comb += ours.eq(theirs)

        for name, (prefix, sink, is_packet, layout) in self._streams.items():
            port = getattr(inner, name)
            tdata = getattr(self, f"{prefix}_tdata")
            tvalid = getattr(self, f"{prefix}_tvalid")
            tready = getattr(self, f"{prefix}_tready")
            if sink:
                m.d.comb += [port.valid.eq(tvalid), tready.eq(port.ready)]
            else:
                m.d.comb += [tvalid.eq(port.valid), port.ready.eq(tready)]
            if is_packet:
                tkeep = getattr(self, f"{prefix}_tkeep")
                tlast = getattr(self, f"{prefix}_tlast")
                if sink:
                    # AXI4-Stream has no start flag: a packet starts after tlast.
                    in_packet = Signal(name=f"{prefix}_in_packet")
                    with m.If(tvalid & port.ready):
                        m.d.sync += in_packet.eq(~tlast)
                    m.d.comb += [
                        port.payload.data.eq(tdata),
                        port.payload.keep.eq(tkeep),
                        port.payload.last.eq(tlast),
                        port.payload.first.eq(~in_packet),
                    ]
                else:
                    m.d.comb += [
                        tdata.eq(port.payload.data),
                        tkeep.eq(port.payload.keep),
                        tlast.eq(port.payload.last),
                    ]
            else:
                octets = layout.size // 8
                if sink:
                    m.d.comb += port.payload.eq(lanes_to_value(tdata, octets))
                else:
                    m.d.comb += tdata.eq(lanes_to_value(port.payload.as_value(), octets))
        return m


def stream_payload_shape(member):
    sig = member.signature
    if isinstance(sig, wiring.FlippedSignature):
        sig = sig.flip()
    return sig.members["payload"].shape
