"""pytest configuration: the opt-in ``slow`` marker, the build groups and the ``cli`` fixture.

Tests marked ``@pytest.mark.slow`` (long soak and sweep runs, FPGA builds) are skipped unless
pytest runs with ``--slow`` (or selects them with ``-m slow``).

Test modules that simulate the same large Verilator build are put in one ``xdist_group``
(:data:`BUILD_GROUPS`; ``make test`` runs ``--dist loadgroup``), so one worker builds it and
runs them all while the other works on something else, instead of waiting on the build's lock.
The groups run first, heaviest first, so that no long build starts near the end of the run.
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


#: Modules that share a large build, heaviest group first: the build they share.
BUILD_GROUPS = {
    "nic_pair": ("test_nic_pair", "test_nic_bench", "test_demo"),
    "link_pair": ("test_llr_link", "test_link_bench"),
    "rs272": ("test_fec_bench", "test_rs272_decoder", "test_rs272_encoder"),
    "cbfc_pair": ("test_cbfc_link", "test_cbfc_bench"),
}


def _build_group(item):
    module = item.path.stem
    for rank, (group, modules) in enumerate(BUILD_GROUPS.items()):
        if module in modules:
            return rank, group
    return len(BUILD_GROUPS), None


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: _build_group(item)[0])      # stable: file order within a rank
    for item in items:
        group = _build_group(item)[1]
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if config.getoption("--slow") or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
