"""Switch forwarding core (spec §10, §11): ingress checks and route lookup, virtual output
queues, the iSLIP allocator and the crossbar, the register map."""

from .core import SwitchCore

__all__ = ["SwitchCore"]
