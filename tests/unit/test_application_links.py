"""The submit task's links to its Spark application, from spark-submit's output lines (pure)."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.application_links import (
    SPARK_APPLICATION_XCOM_KEY,
    SPARK_UI_XCOM_KEY,
    ApplicationLinks,
    DriverApplication,
    LinkScanner,
    app_line,
    application_url,
    parse_app_line,
    parse_tracking_url,
    spark_ui_url,
)

RM = "http://rm.example.com:8088"
MASTER_UI = "http://master.example.com:8080"
YARN_APP = "application_1764316800000_0007"
# What YARN's client prints in cluster deploy mode (Spark 4's Client.formatReportDetails), abridged.
YARN_CLUSTER_OUTPUT = [
    "25/11/28 09:00:01 INFO Client: Submitting application application_1764316800000_0007 to ResourceManager",
    "25/11/28 09:00:02 INFO Client: Application report for application_1764316800000_0007 (state: ACCEPTED)",
    "25/11/28 09:00:02 INFO Client: ",
    "\t client token: N/A",
    "\t tracking URL: http://rm.example.com:8088/proxy/application_1764316800000_0007/",
    "\t user: eos",
]


def test_the_drivers_line_reads_back_after_the_loggers_prefix() -> None:
    line = app_line("app-20251128090000-0003", "http://driver.example.com:4041")
    assert line == 'EOS-APP {"app_id": "app-20251128090000-0003", "ui_url": "http://driver.example.com:4041"}'
    logged = f"2026-11-28 09:00:00,123 INFO airflow_provider_eos.job {line}\n"
    assert parse_app_line(logged) == DriverApplication(app_id="app-20251128090000-0003",
                                                       ui_url="http://driver.example.com:4041")
    # The Spark UI off: no address.
    assert parse_app_line(app_line("local-1764316800000", None)) == DriverApplication(app_id="local-1764316800000")


@pytest.mark.parametrize("line", [
    "EOS-PROGRESS {\"batch\": 1}",
    "EOS-APP not json",
    'EOS-APP {"ui_url": "http://x:4040"}',  # no application id
    "INFO SparkContext: Running Spark version 4.0.1",
])
def test_other_lines_name_no_application(line: str) -> None:
    assert parse_app_line(line) is None


def test_only_a_tracking_url_with_an_address_counts() -> None:
    assert parse_tracking_url(YARN_CLUSTER_OUTPUT[4]) == f"{RM}/proxy/{YARN_APP}/"
    assert parse_tracking_url("\t tracking URL: N/A") is None
    assert parse_tracking_url("\t user: eos") is None


@pytest.mark.parametrize(("master", "manager", "expected"), [
    ("spark://master.example.com:7077", MASTER_UI + "/", f"{MASTER_UI}/app/?appId=app-20251128090000-0003"),
    ("yarn", RM, f"{RM}/cluster/app/app-20251128090000-0003"),
    ("local[2]", None, ""),
    ("spark://master.example.com:7077", None, ""),  # no web address known
    ("k8s://https://api.example.com", "http://k8s.example.com", ""),  # no manager page this package knows
])
def test_the_application_page_per_cluster_manager(master: str, manager: str | None, expected: str) -> None:
    assert application_url(master, manager, "app-20251128090000-0003") == expected
    assert application_url(master, manager, None) == ""


def test_the_spark_ui_is_the_drivers_own_address_except_on_yarn_where_it_is_the_proxy() -> None:
    driver_ui = "http://worker.example.com:4040"
    assert spark_ui_url("spark://m:7077", MASTER_UI, "app-1", driver_ui_url=driver_ui) == driver_ui
    assert spark_ui_url("local[2]", None, "local-1", driver_ui_url=driver_ui) == driver_ui
    assert spark_ui_url("local[2]", None, "local-1", driver_ui_url=None) == ""  # the UI is off
    tracking = f"{RM}/proxy/{YARN_APP}/"
    assert spark_ui_url("yarn", RM, YARN_APP, driver_ui_url=driver_ui, tracking_url=tracking) == tracking
    assert spark_ui_url("yarn", RM + "/", YARN_APP, driver_ui_url=driver_ui) == tracking
    assert spark_ui_url("yarn", RM, YARN_APP, driver_ui_url=None) == ""
    assert spark_ui_url("yarn", None, YARN_APP, driver_ui_url=driver_ui) == ""  # no ResourceManager address


def test_client_mode_links_are_said_once_at_the_drivers_line() -> None:
    scanner = LinkScanner("spark://master.example.com:7077", "client", MASTER_UI)
    assert scanner.feed("INFO StandaloneAppClient$ClientEndpoint: Connecting to master") is None
    links = scanner.feed(app_line("app-20251128090000-0003", "http://worker.example.com:4040"))
    assert links == ApplicationLinks(spark_ui_url="http://worker.example.com:4040",
                                     spark_application_url=f"{MASTER_UI}/app/?appId=app-20251128090000-0003")
    assert links.xcoms() == {SPARK_UI_XCOM_KEY: "http://worker.example.com:4040",
                             SPARK_APPLICATION_XCOM_KEY: f"{MASTER_UI}/app/?appId=app-20251128090000-0003"}
    assert scanner.feed(app_line("app-other", None)) is None
    assert scanner.at_end() is None


def test_a_local_master_has_a_spark_ui_and_no_application_page() -> None:
    links = LinkScanner("local[2]", "client", None).feed(app_line("local-1764316800000", "http://h:4040"))
    assert links == ApplicationLinks(spark_ui_url="http://h:4040", spark_application_url="")


def test_yarn_client_mode_goes_through_the_resourcemanager() -> None:
    links = LinkScanner("yarn", "client", RM).feed(app_line(YARN_APP, "http://edge.example.com:4040"))
    assert links == ApplicationLinks(spark_ui_url=f"{RM}/proxy/{YARN_APP}/",
                                     spark_application_url=f"{RM}/cluster/app/{YARN_APP}")


def test_yarn_cluster_mode_reads_yarns_own_lines() -> None:
    scanner = LinkScanner("yarn", "cluster", RM)
    said = [links for line in YARN_CLUSTER_OUTPUT if (links := scanner.feed(line)) is not None]
    assert said == [ApplicationLinks(spark_ui_url=f"{RM}/proxy/{YARN_APP}/",
                                     spark_application_url=f"{RM}/cluster/app/{YARN_APP}")]
    assert scanner.at_end(YARN_APP) is None


def test_without_a_tracking_url_the_end_says_what_is_known() -> None:
    scanner = LinkScanner("yarn", "cluster", RM)
    assert scanner.feed(YARN_CLUSTER_OUTPUT[0]) is None
    assert scanner.at_end() == ApplicationLinks(spark_ui_url="", spark_application_url=f"{RM}/cluster/app/{YARN_APP}")
    # Nothing known: nothing said (a spark-submit that failed before the driver started).
    assert LinkScanner("local[2]", "client", None).at_end() is None
    # The id the Spark provider's hook found, when the lines gave none.
    assert LinkScanner("yarn", "cluster", RM).at_end(YARN_APP) == ApplicationLinks(
        spark_application_url=f"{RM}/cluster/app/{YARN_APP}")
