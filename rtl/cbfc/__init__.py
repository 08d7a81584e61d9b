"""Credit-based flow control per VC (spec §8): the credit counters, per-VC transmit queues and
receive buffers, and a lossless link end built on the link layer (docs/cbfc.md)."""

from .cbfc_end import CbfcEnd
from .cbfc_rx import CbfcRx
from .cbfc_tx import CbfcTx
from .credit import CreditReceiver, CreditSender
from .frame_fifo import FrameFifo

__all__ = ["CreditSender", "CreditReceiver", "FrameFifo", "CbfcTx", "CbfcRx", "CbfcEnd"]
