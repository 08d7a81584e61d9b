"""``ethlink frame``: decode and encode EthLink frames (spec §4).

``ethlink frame decode HEX`` prints the fields of a frame (body + FCS, in hex; spaces allowed)
as one JSON object; ``ethlink frame encode`` reads such an object from standard input and
prints the frame, with its FCS, in lowercase hex. The JSON keys are those of
:meth:`ethlink.sim.models.Frame.to_json_dict`. Both return exit status 1, with a message on
standard error, for input they cannot handle.
"""

import json
import sys

from .sim.models import Frame

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
    encode.set_defaults(func=_encode)


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
    print(frame.to_bytes().hex())
    return 0
