"""The pre-flight report: verdict, table, fixes, and the JSON form the operator's XCom and the CLI carry."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from airflow_provider_eos.core.preflight import RULES, Finding, PreflightReport, Severity, Status, evaluate
from airflow_provider_eos.core.presentation import preflight_summary, preflight_text
from tests.unit.preflight.builders import CODES, broker, good_facts, spec


def test_the_report_renders_a_table_and_the_fixes_and_serializes() -> None:
    facts = broker("transaction.max.timeout.ms", "30000")(spec(checkpoint_location="/tmp/ck")(good_facts()))
    report = evaluate(facts)
    assert not report.ok
    # EOS317: under `auto` the driver writer may run, and its tasks would spill onto the cluster nodes' disks.
    assert [f.code for f in report.errors] == ["EOS104", "EOS305", "EOS317"]
    assert [f.code for f in report.warnings] == ["EOS307"]
    text = preflight_text(report)
    assert text.splitlines()[0] == (
        "Pre-flight of pipeline 'orders': FAILED - 3 error(s), 1 warning(s), 0 info, 0 not checked, 48 passed"
    )
    header = text.splitlines()[2]
    assert header.split() == ["code", "severity", "result", "check", "details"]
    for code in CODES:
        assert code in text
    assert "Fixes:" in text and "EOS104 (ERROR): set transaction_timeout_ms to 30000 or less" in text
    data = json.loads(json.dumps(report.model_dump(mode="json")))
    assert data["ok"] is False and data["errors"] == ["EOS104", "EOS305", "EOS317"] and data["warnings"] == ["EOS307"]
    row = next(r for r in data["findings"] if r["code"] == "EOS104")
    assert row["severity"] == "ERROR" and row["status"] == "fail" and "30000" in row["message"]
    assert len(data["findings"]) == len(RULES)


def test_the_json_form_keeps_its_shape_and_reads_back() -> None:
    report = evaluate(broker("transaction.max.timeout.ms", "30000")(good_facts()))
    data = report.model_dump(mode="json")
    # The shape the operator's XCom, `eos preflight --json` and alerting read.
    assert list(data) == ["pipeline", "ok", "errors", "warnings", "infos", "not_checked", "findings"]
    assert list(data["findings"][0]) == ["code", "severity", "status", "title", "message", "fix"]
    assert report.to_dict() == data  # what the operator and the CLI call today
    assert all(type(v) is str for row in data["findings"] for k, v in row.items() if k in ("severity", "status"))

    again = PreflightReport.model_validate(data)
    assert again == report
    assert again.finding("EOS104").severity is Severity.ERROR and again.finding("EOS104").status is Status.FAIL
    # The verdict is recomputed from the findings, not taken from the dump.
    forged = PreflightReport.model_validate({**data, "ok": True, "errors": []})
    assert not forged.ok and [f.code for f in forged.errors] == ["EOS104"]


def test_a_finding_validates_its_severity_and_status() -> None:
    row = {"code": "EOS999", "severity": "WARNING", "status": "not_checked", "title": "t", "message": "m"}
    finding = Finding.model_validate(row)
    assert finding.severity is Severity.WARNING and finding.result == "not checked" and finding.fix is None
    assert Finding.model_validate({**row, "status": "fail"}).result == "WARNING"
    with pytest.raises(ValidationError, match="status"):
        Finding.model_validate({**row, "status": "maybe"})


def test_warnings_alone_keep_the_report_ok() -> None:
    report = evaluate(spec(max_offsets_per_trigger=None)(good_facts()))
    assert report.ok and [f.code for f in report.warnings] == ["EOS304"]
    assert "PASSED" in preflight_summary(report)
