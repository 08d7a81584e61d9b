"""The NIC: multipath path selection and the Load/Store target (more to come: requester, RDMA
engines, per-port link stacks)."""

from .ls_responder import LsResponder, LsTarget
from .path_select import PathSelect
from .reachability import Reachability

__all__ = ["PathSelect", "Reachability", "LsResponder", "LsTarget"]
