"""PHY-lite: the XGMII mapping (spec §5), the optional RS(272,258) FEC (spec §6), and the link
channel model that stands for the line between two link ends."""

from .channel import LinkChannel

__all__ = ["LinkChannel"]
