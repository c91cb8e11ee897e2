"""The sub-matrix session's pytest hooks and fixtures live in
lab.session.plugin; pytest finds them here, beside test_cells.py.

    /usr/bin/python3 -m pytest lab/cells --matrix quick [-k nvme] [-n 2]
"""
from lab.session.plugin import (  # noqa: F401 (pytest reads these names)
    lab, pytest_addoption, pytest_configure, pytest_configure_node,
    pytest_generate_tests, pytest_report_header)
