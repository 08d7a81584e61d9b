"""AXI4-Stream port names for exported blocks (spec §12).

Inside the project blocks speak :mod:`amaranth.lib.stream` with the :class:`PacketLayout` beat.
At a Verilog boundary the same streams carry AXI4-Stream names, so that cocotbext-axi and vendor
tools connect without adapters. :class:`AxisExport` wraps a component and renames its ports:

* a stream whose payload is a struct with a ``data`` member (a packet stream, a symbol
  stream, an XGMII word stream) becomes ``PREFIX_tdata`` plus, for the members it has,
  ``PREFIX_tkeep`` (``keep``), ``PREFIX_tlast`` (``last``) and ``PREFIX_tuser`` (``user``, or
  the eight control flags ``ctrl`` of an XGMII word, lane i in ``tuser[i]``), with
  ``PREFIX_tvalid`` and ``PREFIX_tready``. ``first`` is not an AXI4-Stream signal: on an
  input it is derived (the beat after a ``tlast``, or the first beat after reset), on an
  output it is dropped.
* any other stream (a header, for instance) becomes ``PREFIX_tdata``, ``PREFIX_tvalid``,
  ``PREFIX_tready``; its payload value is put on ``tdata`` in lane order (octet 0 of the value's
  big-endian octets in ``tdata[7:0]``), so that a cocotbext-axi source can send the header's wire
  octets as they are.
* every other port keeps its name.

The wrapper adds no register and no latency.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

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
            fields = beat_fields(layout)
            if fields:
                for field, axis_name in fields.items():
                    members[f"{prefix}_{axis_name}"] = fwd(layout[field].shape)
            else:
                width = layout.size
                if width % 8:
                    raise ValueError(f"stream {name!r} payload is {width} bits, not whole octets")
                members[f"{prefix}_tdata"] = fwd(width)
            members[f"{prefix}_tvalid"] = fwd(1)
            members[f"{prefix}_tready"] = bwd(1)
            self._streams[name] = (prefix, sink, fields, layout)
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

        for name, (prefix, sink, fields, layout) in self._streams.items():
            port = getattr(inner, name)
            tvalid = getattr(self, f"{prefix}_tvalid")
            tready = getattr(self, f"{prefix}_tready")
            if sink:
                m.d.comb += [port.valid.eq(tvalid), tready.eq(port.ready)]
            else:
                m.d.comb += [tvalid.eq(port.valid), port.ready.eq(tready)]
            if fields:
                for field, axis_name in fields.items():
                    ours, theirs = getattr(self, f"{prefix}_{axis_name}"), port.payload[field]
                    m.d.comb += theirs.eq(ours) if sink else ours.eq(theirs)
                if sink and "first" in layout.members:
                    # AXI4-Stream has no start flag: a packet starts after tlast.
                    tlast = getattr(self, f"{prefix}_tlast")
                    in_packet = Signal(name=f"{prefix}_in_packet")
                    with m.If(tvalid & port.ready):
                        m.d.sync += in_packet.eq(~tlast)
                    m.d.comb += port.payload.first.eq(~in_packet)
            else:
                tdata = getattr(self, f"{prefix}_tdata")
                octets = layout.size // 8
                if sink:
                    m.d.comb += port.payload.eq(lanes_to_value(tdata, octets))
                else:
                    m.d.comb += tdata.eq(lanes_to_value(port.payload.as_value(), octets))
        return m


#: Payload members that have an AXI4-Stream signal, and its name. An XGMII word's ``ctrl``
#: has no AXI4-Stream signal of its own; like any per-beat side band it goes on ``tuser``.
AXIS_NAMES = {"data": "tdata", "keep": "tkeep", "last": "tlast", "user": "tuser",
              "ctrl": "tuser"}


def beat_fields(layout):
    """``{member: AXI4-Stream name}`` for a struct payload with a ``data`` member, else ``{}``."""
    if not isinstance(layout, data.StructLayout) or "data" not in layout.members:
        return {}
    fields = {field: axis for field, axis in AXIS_NAMES.items() if field in layout.members}
    if len(set(fields.values())) != len(fields):
        raise ValueError(f"payload members {sorted(fields)} would share an AXI4-Stream signal")
    return fields


def stream_payload_shape(member):
    sig = member.signature
    if isinstance(sig, wiring.FlippedSignature):
        sig = sig.flip()
    return sig.members["payload"].shape
