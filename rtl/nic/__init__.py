"""The NIC: multipath path selection, the reachability table, the Load/Store and RDMA
requesters and targets, and the NIC top over 1-4 lossless ports."""

from .ls_requester import LsRequester
from .ls_responder import LsResponder, LsTarget
from .nic import FrameSteer, Nic
from .path_select import PathSelect
from .rdma_requester import RdmaRequester
from .rdma_target import RdmaTarget
from .reachability import Reachability

__all__ = ["PathSelect", "Reachability", "LsRequester", "LsResponder", "LsTarget",
           "RdmaRequester", "RdmaTarget", "FrameSteer", "Nic"]
