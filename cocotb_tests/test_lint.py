"""Every export passes ``verilator --lint-only -Wall`` with only the project's waivers."""

import pytest

from ethlink.lint import lint_configurations, lint_export


@pytest.mark.parametrize("name,params", list(lint_configurations()),
                         ids=lambda value: value if isinstance(value, str)
                         else "-".join(f"{k}{v}" for k, v in value.items()))
def test_lint(name, params):
    ok, messages = lint_export(name, params)
    assert ok, messages
