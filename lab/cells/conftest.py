"""The sub-matrix session's pytest hooks and fixtures live in
lab.session.plugin; pytest finds them here, beside test_cells.py.

    /usr/bin/python3 -m pytest lab/cells --matrix quick [-k nvme] [-n 2]
"""
from lab.session.plugin import (lab, pytest_addoption, pytest_configure,
                                pytest_configure_node, pytest_generate_tests,
                                pytest_report_header, pytest_runtest_setup)

# pytest reads these names from this module.
__all__ = ["lab", "pytest_addoption", "pytest_configure",
           "pytest_configure_node", "pytest_generate_tests",
           "pytest_report_header", "pytest_runtest_setup"]
