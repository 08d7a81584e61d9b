"""Every export passes ``verilator --lint-only -Wall`` with only the project's waivers.

The default run lints each export at its default parameters; the sweep of
:data:`ethlink.lint.LINT_SWEEP` (every other configuration ``ethlink lint`` checks) is opt-in
with ``--slow``. Every configuration a cocotb test simulates is linted as well, by its build
(``sim/runner.py`` builds with ``-Wall`` and the same waivers).
"""

import pytest

from ethlink.exports import EXPORTS
from ethlink.lint import lint_configurations, lint_export


def _cases():
    for name, params in lint_configurations():
        default = params == EXPORTS[name].resolve_params({})
        label = "-".join(f"{k}{v}" for k, v in params.items())
        yield pytest.param(name, params, id=f"{name}-{label}",
                           marks=() if default else pytest.mark.slow)


@pytest.mark.parametrize("name,params", list(_cases()))
def test_lint(name, params):
    ok, messages = lint_export(name, params)
    assert ok, messages
