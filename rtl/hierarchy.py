"""Passing a submodule's members through to the component that holds it: what the tops and
the simulated pairs (two ends joined by lines) do for most of their members."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["forward_member", "pair_name"]


def forward_member(m, ours, theirs, member):
    """Join ``ours`` (a member of the holding component) to ``theirs`` (the same member of a
    submodule, described by ``member``): a port is assigned in its direction, a stream is
    connected."""
    if member.is_port:
        m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
    elif member.flow == In:
        wiring.connect(m, wiring.flipped(ours), theirs)
    else:
        wiring.connect(m, theirs, wiring.flipped(ours))


def pair_name(end, name, member):
    """The name a pair gives member ``name`` of its end ``end`` ("a" or "b"): ports prefixed
    (``a_enable``), streams suffixed (``i_a``, so that the export's AXI4-Stream prefix keeps
    ``s_axis``/``m_axis`` first)."""
    return f"{end}_{name}" if member.is_port else f"{name}_{end}"
