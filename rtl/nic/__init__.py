"""The NIC: multipath path selection, the reachability table, the Load/Store requester and
target (more to come: RDMA engines, per-port link stacks)."""

from .ls_loopback import LsLoopback
from .ls_requester import LsRequester
from .ls_responder import LsResponder, LsTarget
from .path_select import PathSelect
from .reachability import Reachability

__all__ = ["PathSelect", "Reachability", "LsRequester", "LsResponder", "LsTarget", "LsLoopback"]
