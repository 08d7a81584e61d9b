"""Link layer (spec §5, §7): the MAC on XGMII, link-level retry, link control words, and one
link end that joins them (docs/link.md). CBFC (spec §8) sits on it (:mod:`..cbfc`)."""

from .control import LcwArbiter, PingUnit
from .layouts import LcwLayout, MacRxFrameLayout, MacTxFrameLayout
from .link_end import LinkEnd
from .llr_rx import LlrRx, RxState
from .llr_tx import LlrTx, TxState
from .mac_rx import MacRx
from .mac_tx import MacTx

__all__ = ["MacTx", "MacRx", "LlrTx", "LlrRx", "LcwArbiter", "PingUnit", "LinkEnd",
           "LcwLayout", "MacTxFrameLayout", "MacRxFrameLayout",
           # The link end's states, which the layers above read.
           "TxState", "RxState"]
