"""Composing blocks: how a component shows the members of a block it holds.

Blocks are joined with :func:`amaranth.lib.wiring.connect` wherever two interfaces meet. A
component that holds a block and shows some of that block's members as its own (a NIC shows
each port's link controls and counters, a simulated pair each end's) declares those members in
its own signature, under the same names, and joins them with :func:`forward`. The names come
from the block's signature, never built from strings; Verilog names are made from the nested
signature once, at the export boundary (:mod:`ethlink.rtl.export`).
"""

from amaranth.hdl import Const, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In

__all__ = ["forward", "broadcast", "members_of", "is_stream"]


def is_stream(signature):
    """``signature`` (or its flip) is an :class:`amaranth.lib.stream.Signature`."""
    if isinstance(signature, wiring.FlippedSignature):
        signature = signature.flip()
    return isinstance(signature, stream.Signature)


def members_of(signature, *names):
    """``{name: member}`` of the members ``names`` of ``signature``, in that order: a group of a
    block's members that a holder declares as its own (:func:`forward` joins them)."""
    return {name: signature.members[name] for name in names}


def forward(m, outer, inner, members=None):
    """Join members of ``inner`` (an interface of a submodule) to the same members of ``outer``
    (the interface of the component that holds it): inputs pass inwards, outputs outwards,
    interfaces are connected.

    ``members`` (a signature or a ``{name: member}`` mapping, default ``inner``'s whole
    signature) names the members; each must exist in both with the same shape or signature,
    or elaboration stops here with the name."""
    if members is None:
        members = inner.signature.members
    elif isinstance(members, wiring.Signature):
        members = members.members
    for name, member in members.items():
        try:
            ours = getattr(outer, name)
        except AttributeError:
            raise AttributeError(f"{outer!r} has no member {name!r} to forward to") from None
        _join(m, ours, getattr(inner, name), member, name)


def _join(m, ours, theirs, member, path):
    if isinstance(theirs, (list, tuple)):
        for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _join(m, a, b, member, f"{path}[{k}]")
    elif member.is_port:
        outside, inside = Value.cast(ours).shape(), Value.cast(theirs).shape()
        if outside != inside:
            raise TypeError(f"member {path}: {outside} outside, {inside} inside")
        m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
    else:
        wiring.connect(m, wiring.flipped(ours), theirs)


def broadcast(m, source, *sinks):
    """Give every beat of stream ``source`` to all ``sinks`` in the same cycle: streams that
    never wait (``always_ready``; received LCWs, for instance). ``source.ready`` is held high.
    Each sink may be a submodule's input stream or an output stream of the module itself."""
    for sink in sinks:
        if sink.signature.members["payload"].shape != source.signature.members["payload"].shape:
            raise TypeError(f"cannot broadcast {source.signature!r} to {sink.signature!r}")
        m.d.comb += [sink.valid.eq(source.valid), sink.payload.eq(source.payload)]
    if not isinstance(source.ready, Const):
        m.d.comb += source.ready.eq(1)
