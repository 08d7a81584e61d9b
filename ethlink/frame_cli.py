"""``ethlink frame``: decode and encode EthLink frames (spec §4).

``ethlink frame decode HEX`` prints the fields of a frame (body + FCS, in hex; spaces allowed)
as one JSON object; ``ethlink frame encode`` reads such an object from standard input and
prints the frame, with its FCS, in lowercase hex. ``ethlink frame encode --xgmii [--seq N]``
prints instead the XGMII words a link end sends for it (spec §5), from the start word to the
word holding ``/T/``, as a JSON list with one object per word: ``data``, the 8 octets in hex,
lane 0 first, and ``ctrl``, the control flags as a hex byte (bit i for lane i); the frame is
sequenced with seq N, or unsequenced without ``--seq``. The JSON keys are those of
:meth:`ethlink.sim.models.Frame.to_json_dict`. Both return exit status 1, with a message on
standard error, for input they cannot handle.
"""

import argparse
import json
import sys

from .rtl.wire import SEQ_BITS
from .sim.models import Frame
from .sim.models.mac import frame_words

__all__ = ["register"]


def register(subparsers):
    """Add the ``frame`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser("frame", help="decode and encode EthLink frames",
                                   description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="frame_action", required=True, metavar="ACTION")
    decode = actions.add_parser("decode", help="print the fields of a frame as JSON")
    decode.add_argument("hex", nargs="+", metavar="HEX",
                        help="frame octets (body + FCS) in hex; may be split by spaces")
    decode.set_defaults(func=_decode)
    encode = actions.add_parser("encode", help="print the frame a JSON object on stdin describes")
    encode.add_argument("--xgmii", action="store_true",
                        help="print the XGMII words on the line instead (JSON list)")
    encode.add_argument("--seq", type=_seq, metavar="N",
                        help="with --xgmii: the LLR sequence number (decimal or 0x hex); "
                             "unsequenced without it")
    encode.set_defaults(func=_encode)


def _seq(text):
    value = int(text, 0)
    if not 0 <= value < 1 << SEQ_BITS:
        raise argparse.ArgumentTypeError(f"a sequence number is 0 … 0x{(1 << SEQ_BITS) - 1:x}")
    return value


def _fail(action, error):
    print(f"ethlink frame {action}: {error}", file=sys.stderr)
    return 1


def _decode(args):
    """Print the frame in ``args.hex`` as JSON; 1 if it is not hex or cannot be decoded."""
    text = "".join("".join(args.hex).split())
    try:
        octets = bytes.fromhex(text)
    except ValueError:
        return _fail("decode", f"not an even number of hex digits: {text!r}")
    try:
        frame = Frame.from_bytes(octets)
    except ValueError as error:
        return _fail("decode", error)
    print(json.dumps(frame.to_json_dict()))
    return 0


def _encode(args):
    """Print, in hex, the frame (with FCS) the JSON object on stdin describes; 1 if it is
    not valid JSON or not a valid frame object."""
    try:
        obj = json.load(sys.stdin)
    except ValueError as error:
        return _fail("encode", f"standard input is not JSON: {error}")
    try:
        frame = Frame.from_json_dict(obj)
    except ValueError as error:
        return _fail("encode", error)
    if args.seq is not None and not args.xgmii:
        return _fail("encode", "--seq needs --xgmii")
    if not args.xgmii:
        print(frame.to_bytes().hex())
        return 0
    words, _ = frame_words(frame.to_bytes(with_fcs=False), args.seq)
    print(json.dumps([{"data": word.data.to_bytes(8, "little").hex(), "ctrl": f"{word.ctrl:02x}"}
                      for word in words]))
    return 0
