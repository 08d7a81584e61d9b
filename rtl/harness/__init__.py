"""Simulation harnesses: gateware that exists only to be simulated.

Nothing in this package is meant for a board. Each top joins synthesisable blocks the way a
test or the demo needs them: two link ends over simulated lines (:mod:`.pairs`), engines back
to back over a lossy frame path and a deparser into a parser (:mod:`.loopback`). Their Verilog
exports are listed apart from the synthesisable ones (``ethlink verilog --list``).
"""
