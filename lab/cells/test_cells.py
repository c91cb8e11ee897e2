"""One test per matrix cell: boot, run, store, check it is trustworthy
(and that its counters show the path the matrix expects)."""
from __future__ import annotations

import json

import pytest

from lab.cache import DiskFull
from lab.session import cellrun
from lab.session.plugin import PROPERTY, SessionState, build_of, stop
from lab.spec import expect
from lab.spec.model import Cell


def test_cell(cell: Cell, lab: SessionState,
              request: pytest.FixtureRequest) -> None:
    matrix, cache, run = lab.matrix, lab.cache, lab.run
    plan = matrix.plan(cell)
    build = build_of(lab, plan.variant)
    inputs = cellrun.inputs(plan, build, cache)
    if not request.config.getoption("--rerun") and \
            run.is_done(cell, inputs):
        pytest.skip(f"result reused from run {run.id}")
    try:
        res, prov = cellrun.execute(plan, build, run.log_dir(cell.id),
                                    cache)
    except DiskFull as exc:
        stop(request.session, exc)
        pytest.fail(str(exc), pytrace=False)
    # The cell's place in its block: a covariate the statistics can see.
    prov["slot"] = matrix.order(lab.sub, cell.repeat, cell.workload,
                                cell.backend).index(cell.variant)
    request.node.user_properties.append((PROPERTY, json.dumps({
        "cell": {"repeat": cell.repeat, "variant": cell.variant,
                 "backend": cell.backend, "workload": cell.workload},
        "inputs": inputs, "provenance": prov, "result": res.result})))
    if not res.ok:
        pytest.fail(f"{res.reason}: {res.detail} (console: "
                    f"{res.console_log})", pytrace=False)
    problems = cellrun.sanity(res.result) + \
        expect.check(matrix.expect, cell, res.result)
    assert not problems, "; ".join(problems)
