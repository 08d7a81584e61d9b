
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["sby_command", "run_sby", "run_yosys"]


def _tools(*names):
    """``{name: path}`` of the ``yowasp-<name>`` tools beside the interpreter (or on PATH)."""
    bindir = Path(sys.executable).parent
    tools = {name: shutil.which(f"yowasp-{name}", path=str(bindir)) or shutil.which(
        f"yowasp-{name}") for name in names}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not found: install the project "
                           f"(pip install -e .)")
    return tools


def sby_command():
    """yowasp-sby with the WebAssembly yosys, smtbmc and witness tools of the same wheel."""
    tools = _tools("sby", "yosys", "yosys-smtbmc", "yosys-witness")
    return [tools["sby"], "--yosys", tools["yosys"], "--smtbmc", tools["yosys-smtbmc"],
            "--witness", tools["yosys-witness"]]


def run_yosys(workdir, script):
    """Run the WebAssembly yosys on ``workdir / script``, its log kept as ``<script>.log``;
    returns ``(returncode, seconds, log text)``."""
    start = time.monotonic()
    log = Path(workdir) / f"{script}.log"
    result = subprocess.run([_tools("yosys")["yosys"], "-q", "-l", log.name, script],
                            cwd=workdir, capture_output=True, text=True)
    seconds = time.monotonic() - start
    text = log.read_text() if log.exists() else ""
    return result.returncode, seconds, text + result.stderr


def run_sby(workdir, sby_file, tasks=()):
    """Run SymbiYosys on ``workdir / sby_file`` (its ``tasks``, or all), one task at a time
    (the tasks are short and the machine may be busy), its log kept as ``sby.log``; returns
    ``(returncode, seconds)``."""
    env = dict(os.environ)
    # The solver binary (yices-smt2) lives beside the interpreter in the environment.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    start = time.monotonic()
    result = subprocess.run([*sby_command(), "-j", "1", "-f", sby_file, *tasks], cwd=workdir,
                            env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    (Path(workdir) / "sby.log").write_text(result.stdout + result.stderr)
    return result.returncode, seconds
