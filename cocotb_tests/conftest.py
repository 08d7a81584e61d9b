"""pytest configuration: the opt-in ``slow`` marker and the ``cli`` fixture.

Tests marked ``@pytest.mark.slow`` (long soak and sweep runs, FPGA builds) are skipped unless
pytest runs with ``--slow`` (or selects them with ``-m slow``).
"""

import pytest

from ethlink.cli import main


@pytest.fixture
def cli(capsys):
    """Run ``ethlink ARGV...`` in this process; returns ``(exit status, stdout, stderr)``."""
    def run(*argv):
        with pytest.raises(SystemExit) as exit_info:
            main(list(argv))
        captured = capsys.readouterr()
        return exit_info.value.code or 0, captured.out, captured.err
    return run


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (soak, sweeps, FPGA builds)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow") or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
