"""The NIC: multipath path selection, the reachability table, the Load/Store requester and
target, and the NIC top over 1-4 lossless ports (more to come: RDMA engines)."""

from .ls_loopback import LsLoopback
from .ls_requester import LsRequester
from .ls_responder import LsResponder, LsTarget
from .nic import FrameSteer, Nic, NicPair
from .path_select import PathSelect
from .reachability import Reachability

__all__ = ["PathSelect", "Reachability", "LsRequester", "LsResponder", "LsTarget", "LsLoopback",
           "FrameSteer", "Nic", "NicPair"]
