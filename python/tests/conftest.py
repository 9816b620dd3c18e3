"""pytest configuration of gdn's Python tests.

A run in which no test passed fails (exit status 5, pytest's "no tests
collected"), also when every test was skipped: a suite that silently tests
nothing must not look green.
"""

import pytest


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter is not None else 0
    if exitstatus == 0 and passed == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
