"""The export boundary: the one place where a block's nested interfaces become Verilog port
names (spec §12).

Inside the project blocks speak typed, nested :mod:`amaranth.lib.wiring` interfaces: streams of
:class:`~ethlink.rtl.stream.PacketLayout` beats, arrays of ports (``Out(sig).array(n)``), a
register bus, a ``count`` interface of counters. :class:`VerilogTop` wraps a block for export
and names every port from its signature:

* **The path, joined.** A member's path is joined with ``_``; an array index is appended to the
  member it indexes: ``count.frames_sent`` → ``count_frames_sent``, ``p[1].enable`` →
  ``p1_enable``, ``csr.addr`` → ``csr_addr``, ``count.mac_tx.frames`` →
  ``count_mac_tx_frames``. :func:`flat_name` is the rule, :func:`ports` applies it.
* **Streams as AXI4-Stream.** A stream member is a group of ports under a prefix: by default
  ``s_axis`` for a stream the block takes and ``m_axis`` for one it gives, followed by ``_`` and
  the stream's joined name (none for the streams named ``i`` and ``o``); an export may give other
  prefixes (``prefixes``). A payload struct with a ``data`` member (a packet beat, an XGMII word
  stream) becomes ``PREFIX_tdata`` and, for the members it has, ``PREFIX_tkeep`` (``keep``),
  ``PREFIX_tlast`` (``last``) and ``PREFIX_tuser`` (``user``, or an XGMII word's eight control
  flags ``ctrl``, lane i in ``tuser[i]``); ``first`` is not an AXI4-Stream signal: on an input it
  is derived (the beat after a ``tlast``, or the first beat after reset), on an output it is
  dropped. Any other payload (a header, an LCW) is ``PREFIX_tdata`` in lane order (octet 0 of
  the value's big-endian octets in ``tdata[7:0]``), so that a cocotbext-axi source can send a
  header's wire octets as they are. ``PREFIX_tvalid`` and ``PREFIX_tready`` complete the group;
  a stream that is always ready (``always_ready=True``) has no ``tready``, as AXI4-Stream allows.

The wrapper adds no register and no latency.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .compose import is_stream
from .wire import lanes_to_value

__all__ = ["VerilogTop", "flat_name", "ports", "stream_prefix", "AXIS_NAMES", "beat_fields"]


def flat_name(path):
    """The Verilog name of the member at ``path`` (names and array indices)."""
    parts = []
    for item in path:
        if isinstance(item, int):
            parts[-1] += str(item)
        else:
            parts.append(item)
    return "_".join(parts)


def ports(signature, path=()):
    """``(path, member)`` for every port and every stream of ``signature``, arrays expanded,
    sub-interfaces entered (their flows as the block sees them), in member order."""
    for name, member in signature.members.items():
        yield from _expand(path + (name,), member, member.dimensions)


def _expand(path, member, dimensions):
    if dimensions:
        for k in range(dimensions[0]):
            yield from _expand(path + (k,), member, dimensions[1:])
    elif member.is_port or is_stream(member.signature):
        yield path, member
    else:
        yield from ports(member.signature, path)


def _resolve(interface, path):
    for item in path:
        interface = interface[item] if isinstance(item, int) else getattr(interface, item)
    return interface


def stream_prefix(name, sink, prefixes=None):
    """The AXI4-Stream prefix of stream ``name`` (joined), taken (``sink``) or given."""
    if prefixes and name in prefixes:
        return prefixes[name]
    base = "s_axis" if sink else "m_axis"
    return base if name in ("i", "o") else f"{base}_{name}"


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


def _payload_layout(member):
    signature = member.signature
    if isinstance(signature, wiring.FlippedSignature):
        signature = signature.flip()
    return signature.members["payload"].shape, signature.always_ready


class VerilogTop(wiring.Component):
    """``inner`` with every member flattened to a Verilog port (see the module docstring).

    Parameters
    ----------
    inner : wiring.Component
        The block to export.
    prefixes : dict of str to str
        AXI4-Stream prefix of the streams (by joined name) that do not take the default one.
    """
    def __init__(self, inner, prefixes=None):
        self._inner = inner
        self._ports = []     # (path, our name) of each port
        self._streams = []   # (path, prefix, sink, fields, layout, always_ready)
        members = {}

        def add(name, member):
            if name in members:
                raise NameError(f"two members of {inner!r} flatten to {name!r}")
            members[name] = member

        for path, member in ports(inner.signature):
            name = flat_name(path)
            if member.is_port:
                add(name, member)
                self._ports.append((path, name))
                continue
            sink = member.flow == In
            prefix = stream_prefix(name, sink, prefixes)
            fwd, bwd = (In, Out) if sink else (Out, In)
            layout, always_ready = _payload_layout(member)
            fields = beat_fields(layout)
            if fields:
                for field, axis_name in fields.items():
                    add(f"{prefix}_{axis_name}", fwd(layout[field].shape))
            else:
                if layout.size % 8:
                    raise ValueError(f"stream {name!r} payload is {layout.size} bits, not "
                                     f"whole octets")
                add(f"{prefix}_tdata", fwd(layout.size))
            add(f"{prefix}_tvalid", fwd(1))
            if not always_ready:
                add(f"{prefix}_tready", bwd(1))
            self._streams.append((path, prefix, sink, fields, layout, always_ready))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner

        for path, name in self._ports:
            ours, theirs = getattr(self, name), _resolve(inner, path)
            member = self.signature.members[name]
            m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)

        for path, prefix, sink, fields, layout, always_ready in self._streams:
            port = _resolve(inner, path)
            tvalid = getattr(self, f"{prefix}_tvalid")
            if sink:
                m.d.comb += port.valid.eq(tvalid)
                if not always_ready:
                    m.d.comb += getattr(self, f"{prefix}_tready").eq(port.ready)
            else:
                m.d.comb += tvalid.eq(port.valid)
                if not always_ready:
                    m.d.comb += port.ready.eq(getattr(self, f"{prefix}_tready"))
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
