"""The ``ethlink`` command: exports, lint, synthesis, frame tools, benches, proofs and the demo.

Each sub-command lives in its own module, which provides ``register(subparsers)``; the module
adds its parser and sets ``func`` to a callable taking the parsed arguments and returning the
exit status.
"""

import argparse
import importlib
import sys

__all__ = ["main"]

#: Modules that provide sub-commands, in the order ``ethlink --help`` lists them.
COMMAND_MODULES = (
    "ethlink.sim.demo",
    "ethlink.exports",
    "ethlink.lint",
    "ethlink.synth",
    "ethlink.frame_cli",
    "ethlink.bench",
    "ethlink.formal_cli",
)


def build_parser():
    parser = argparse.ArgumentParser(prog="ethlink", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    sys.exit(args.func(args) or 0)
