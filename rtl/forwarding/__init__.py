"""Forwarding layer: OEFH/TH deparse and parse (spec §4), later path selection (spec §9)."""

from .deparser import OefhDeparser
from .parser import OefhParser

__all__ = ["OefhDeparser", "OefhParser"]
