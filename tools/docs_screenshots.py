"""The docs' Airflow screenshots, taken anew on the example pipeline: ``python -m tools.docs_screenshots``.

``make screenshots`` runs it. It starts its own devstack broker and Airflow deployment (the code of
``eos devstack up`` and ``eos airflow up``, in a fresh state folder under the temporary folder, bound
to 127.0.0.1 on free ports), deploys ``dags/pipelines/orders_enrich.yaml`` (its broker address
replaced), writes that pipeline's checkpoint with batches 0..7 planned and committed, and drives
headless Chromium through the on-call's steps, as ``tests/deployment/test_recovery_ui.py`` does:

- ``airflow-recovery-form.png``: the ``eos_manual_recovery`` trigger form, filled for a verify;
- ``airflow-refused-request.png``: an align whose confirmation names the pipeline with a dash, refused;
- ``airflow-align-plan.png``: the align dry run's plan (the sink group has no commit yet), written only
  when the card fits in :data:`MAX_WIDTH` pixels (its "Next step" line does not, today);
- ``airflow-verify-result.png``: verify once the sink group committed batch 7: IN_SYNC on every partition;
- ``airflow-health-report.png``: ``eos_health_check``'s report of the pipeline;
- ``airflow-pipelines-view.png``: the "Exactly-once pipelines" view, the pipeline's name linking its
  own DAG (``eos_pipeline__orders_enrich``).

Each result is the task's Rendered Templates tab, the viewport widened until no line of the card is
cut off on the right and made as tall as the templates table (the form: the dialog alone, whole).
The checkpoint and the spec go under ``/var/lib/eos`` (``checkpoints/orders_enrich``,
``pipelines/orders_enrich.yaml``, as in the example spec) when that folder does not exist yet and
can be made (it is removed afterwards), else under the state folder. Everything started is stopped
at the end, on failure too (and by the devstack's reapers if this process is killed). Needs ``make
install`` (Java, the Kafka jars, Playwright and a system Chromium, ``$EOS_CHROMIUM`` to choose one).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
EXAMPLE_SPEC = REPO / "dags" / "pipelines" / "orders_enrich.yaml"
#: The example spec's broker and checkpoint, replaced by the devstack's and the one written here.
EXAMPLE_BOOTSTRAP = "127.0.0.1:9092"
EXAMPLE_CHECKPOINT = "/var/lib/eos/checkpoints/orders_enrich"
REALISTIC_ROOT = Path("/var/lib/eos")
RECOVERY_DAG = "eos_manual_recovery"
HEALTH_DAG = "eos_health_check"
PARTITIONS = 3
LAST_BATCH = 7
VIEWPORT = (1400, 900)
#: The shortest a result's picture is: Airflow's side bar (its links top and bottom) fits.
MIN_HEIGHT = 600
#: The widest a picture may get while its card is fitted (a card that is wider is left scrolled).
MAX_WIDTH = 2600


def _log(message: str) -> None:
    print(f"[docs_screenshots] {message}", flush=True)


# -- the pipeline --------------------------------------------------------------------------------


def _root(wanted: Path, state: Path) -> tuple[Path, bool]:
    """Where the checkpoint and the spec go: ``wanted`` if it can be made now (then it is ours to remove),
    else ``<state>/eos``. Returns the folder and whether it is to be removed apart from the state folder."""
    if not wanted.exists():
        try:
            wanted.mkdir(mode=0o755)  # not parents: only /var/lib/eos itself is ours
        except OSError:
            pass
        else:
            return wanted, True
    _log(f"{wanted} exists or cannot be made: the checkpoint and the spec go under the state folder")
    fallback = state / "eos"
    fallback.mkdir()
    return fallback, False


class ExamplePipeline:
    """``orders_enrich`` on the devstack broker: its topics, a checkpoint at batch :data:`LAST_BATCH`, its spec."""

    def __init__(self, bootstrap: str, root: Path, spec_folder: Path) -> None:
        from airflow_provider_eos.core.spec import PipelineSpec
        from tests.support.checkpoints import write_checkpoint
        from tests.support.kafka import create_topic, wait_for_group_coordinator

        self.bootstrap = bootstrap
        example = PipelineSpec.load(EXAMPLE_SPEC)
        self.checkpoint = root / "checkpoints" / example.name
        text = EXAMPLE_SPEC.read_text()
        for old, new in ((EXAMPLE_BOOTSTRAP, bootstrap), (EXAMPLE_CHECKPOINT, str(self.checkpoint))):
            if old not in text:
                raise SystemExit(f"{EXAMPLE_SPEC} no longer names {old}: update tools/docs_screenshots.py")
            text = text.replace(old, new)
        self.spec_path = spec_folder / EXAMPLE_SPEC.name
        self.spec_path.write_text(text)
        self.spec = PipelineSpec.load(self.spec_path)
        self.name = self.spec.name
        self.input_topic = self.spec.input_topics[0]
        self.query_id = str(uuid.uuid4())

        create_topic(bootstrap, self.input_topic, PARTITIONS)
        wait_for_group_coordinator(bootstrap, self.input_topic)
        create_topic(bootstrap, self.spec.output_topic, PARTITIONS)
        if self.spec.dlq_topic:
            create_topic(bootstrap, self.spec.dlq_topic, 1)
        write_checkpoint(self.checkpoint, topic=self.input_topic, partitions=PARTITIONS, query_id=self.query_id,
                         offsets=range(LAST_BATCH + 1), commits=range(LAST_BATCH + 1))

    def end_offsets(self) -> dict[Any, int]:
        """``offsets/LAST_BATCH`` of the checkpoint, per input partition."""
        from tests.support.checkpoints import batch_end_offsets

        return batch_end_offsets(self.input_topic, LAST_BATCH, PARTITIONS)

    def produce_orders(self) -> None:
        """As many order events in each input partition as the checkpoint's last batch read (no lag)."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        number = 0
        for tp, end in self.end_offsets().items():
            for _ in range(end):
                number += 1
                event = {"id": f"order-{number}", "user": f"user-{number % 97}",
                         "amount": round((number * 7.3) % 2000, 2)}
                producer.produce(self.input_topic, key=event["user"].encode(), value=json.dumps(event).encode(),
                                 partition=tp.partition)
        if producer.flush(30):
            raise SystemExit("the order events were not all delivered to the devstack broker")

    def commit_last_batch(self) -> None:
        """Commit the sink group as the job's last batch did: its end offsets, with its batch marker."""
        from confluent_kafka.admin import AdminClient

        from airflow_provider_eos.core.markers import BatchMarker
        from airflow_provider_eos.kafka.group_offsets import write_committed_offsets

        marker = BatchMarker(self.query_id, LAST_BATCH).encode()
        write_committed_offsets(AdminClient({"bootstrap.servers": self.bootstrap}), self.spec.group_id,
                                {tp: (offset, marker) for tp, offset in self.end_offsets().items()})


# -- the pictures --------------------------------------------------------------------------------


_OVERFLOW_JS = """() => {
    // How far the widest scrolled box of the page (a card's code block, the templates table) runs past
    // its visible width, in CSS pixels.
    let worst = document.documentElement.scrollWidth - document.documentElement.clientWidth;
    for (const el of document.querySelectorAll('pre, code, table, div')) {
        const style = getComputedStyle(el);
        if (el.clientWidth > 0 && ['auto', 'scroll'].includes(style.overflowX)) {
            worst = Math.max(worst, el.scrollWidth - el.clientWidth);
        }
    }
    return worst;
}"""

_BOTTOM_JS = """() => {
    // The bottom of what a picture must hold: the Rendered Templates table, and the run's task list.
    let bottom = 0;
    for (const el of document.querySelectorAll('table, [data-testid="header-card"]')) {
        bottom = Math.max(bottom, el.getBoundingClientRect().bottom);
    }
    return Math.ceil(bottom + window.scrollY);
}"""


def shoot_result(browser: Any, target: Path, *, must_fit: bool = True) -> Path | None:
    """A PNG of the open Rendered Templates tab: the viewport widened until no line is cut off on the
    right, and as tall as the templates table needs.

    :param must_fit: what to do with a card that is still cut off at :data:`MAX_WIDTH`: fail (True) or
        write no picture and return None.
    """
    page = browser.page
    width, height = VIEWPORT
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(300)
    while (overflow := int(page.evaluate(_OVERFLOW_JS))) > 0:
        if width >= MAX_WIDTH:
            page.set_viewport_size(browser.viewport)
            problem = f"{target.name}: a line of the card is still {overflow}px wider than the page at {MAX_WIDTH}px"
            if must_fit:
                raise SystemExit(problem)
            _log(f"{problem}; not written")
            return None
        width = min(MAX_WIDTH, width + overflow + 24)
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(400)
    # As tall as the content: Airflow's side bar reflows to the new height, so nothing is cut at the bottom.
    height = max(MIN_HEIGHT, int(page.evaluate(_BOTTOM_JS)) + 24)
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(400)
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target))
    page.set_viewport_size(browser.viewport)
    _log(f"wrote {target} ({width}x{height})")
    return target


def shoot_form(browser: Any, target: Path) -> Path:
    """A PNG of the open trigger dialog alone, whole: the viewport made tall enough that it needs no scrolling."""
    page = browser.page
    dialog = page.get_by_role("dialog").first
    page.set_viewport_size({"width": VIEWPORT[0], "height": 2400})
    page.wait_for_timeout(400)
    dialog.evaluate("d => { d.scrollTop = 0; d.querySelectorAll('*').forEach(e => { e.scrollTop = 0; }); }")
    page.wait_for_timeout(200)
    target.parent.mkdir(parents=True, exist_ok=True)
    dialog.screenshot(path=str(target))
    page.set_viewport_size(browser.viewport)
    _log(f"wrote {target}")
    return target


def _expect(card: str, *parts: str, what: str) -> None:
    missing = [part for part in parts if part not in card]
    if missing:
        raise SystemExit(f"{what}: the card lacks {missing}; it reads:\n{card}")


def take_screenshots(browser: Any, api: Any, deployment: Any, pipeline: ExamplePipeline, out: Path) -> list[Path]:
    """The on-call's steps in the browser; every card is checked before its picture is kept."""
    from airflow_provider_eos.core.dag_ids import pipeline_dag_id
    from tests.deployment.conftest import deploy_spec

    name = pipeline.name
    # The pipeline's own DAG too: the view links it only once Airflow has it.
    deploy_spec(deployment, pipeline.spec_path, api, name, dag_ids=(RECOVERY_DAG, pipeline_dag_id(name)))
    browser.login(deployment.url, deployment.user, deployment.password())
    shots: list[Path] = []

    def run(task: str, **fields: Any) -> str:
        browser.open_trigger_form(RECOVERY_DAG)
        browser.fill_recovery_form(pipeline=name, **fields)
        run_id = browser.trigger()
        state = browser.wait_for_run_state(RECOVERY_DAG, run_id, timeout_s=300)
        if state != "success":
            raise SystemExit(f"{RECOVERY_DAG} run {run_id} ended {state}: {api.task_states(RECOVERY_DAG, run_id)}")
        browser.open_task(RECOVERY_DAG, run_id, task, tab="Rendered Templates")
        return browser.rendered_field("result")

    # 1. The form, filled for a read-only verify: nothing to type in Confirmation.
    browser.open_trigger_form(RECOVERY_DAG)
    browser.fill_recovery_form(pipeline=name, action="verify", dry_run=True, confirmation=None)
    shots.append(shoot_form(browser, out / "airflow-recovery-form.png"))

    # 2. An align whose confirmation spells the pipeline with a dash: refused, nothing changed.
    card = run("refused", action="align", dry_run=False, confirmation=f"align {name.replace('_', '-')}")
    _expect(card, f"## align {name}: REFUSED", "nothing was changed", what="the refused request")
    shots.append(shoot_result(browser, out / "airflow-refused-request.png"))

    # 3. The dry run of that align: its plan, per partition (the sink group has no commit yet).
    card = run("align", action="align", dry_run=True, confirmation=None)
    _expect(card, "(dry run: nothing changed)", f"{PARTITIONS} of {PARTITIONS} partition(s) would change",
            what="the align plan")
    # Its "Next step" line (the CLI command and the operator call) is wider than any page today: written
    # only once the card fits.
    plan = shoot_result(browser, out / "airflow-align-plan.png", must_fit=False)
    shots += [plan] if plan else []

    # 4. The sink group commits batch LAST_BATCH, as the job does: verify says IN_SYNC on every partition.
    pipeline.commit_last_batch()
    card = run("verify", action="verify", dry_run=True, confirmation=None)
    _expect(card, f"## verify {name}: OK", f"IN_SYNC {PARTITIONS} of {PARTITIONS} partition(s)", what="verify")
    shots.append(shoot_result(browser, out / "airflow-verify-result.png"))

    # 5. The health check's report of the pipeline (one mapped task per spec: ours is the only one).
    api.wait_for_doc_mention(HEALTH_DAG, f"`{name}`")
    # Through the REST API: the health check has no params, so its trigger dialog has no Run Parameters
    # section for the browser's form helper to open (the step failed there).
    run_id = api.trigger(HEALTH_DAG, {}, run_id=f"manual__{dt.datetime.now(dt.UTC).isoformat()}")  # as the UI names it
    browser.wait_for_run_state(HEALTH_DAG, run_id, timeout_s=300)
    mine = [ti for ti in api.task_instances(HEALTH_DAG, run_id)
            if (ti.get("rendered_map_index") or "").startswith(f"{name}: ")]
    if len(mine) != 1 or mine[0]["state"] != "success":
        raise SystemExit(f"{HEALTH_DAG} run {run_id}: the report of {name} is {mine}")
    browser.open_task(HEALTH_DAG, run_id, "health_report", tab="Rendered Templates", map_index=mine[0]["map_index"])
    card = browser.rendered_field("result")
    _expect(card, f"## health {name}: OK", "verification: IN_SYNC", what="the health report")
    shots.append(shoot_result(browser, out / "airflow-health-report.png"))

    # 6. The "Exactly-once pipelines" view: the pipeline's row, its name linking its own DAG.
    shots.append(shoot_pipelines_view(browser, name, out / "airflow-pipelines-view.png"))
    return shots


def shoot_pipelines_view(browser: Any, name: str, target: Path) -> Path:
    """A PNG of the "Exactly-once pipelines" view (Browse menu), once ``name``'s row is healthy, in sync
    and its name links the pipeline's own DAG."""
    from airflow_provider_eos.core.dag_ids import pipeline_dag_id

    browser.goto("/plugin/eos-pipelines")
    row = browser.page.frame_locator("iframe").first.locator(f'tr[data-pipeline="{name}"]')
    row.wait_for()
    text = row.inner_text()
    _expect(text, "HEALTHY", "IN_SYNC", what="the pipelines view's row")
    link = row.locator('td[data-column="pipeline"] a').get_attribute("href") or ""
    if not link.endswith(f"/dags/{pipeline_dag_id(name)}"):
        raise SystemExit(f"the pipelines view's row of {name} links {link!r}, not its DAG {pipeline_dag_id(name)}")
    browser.screenshot(target, whole_dialog=False)
    _log(f"wrote {target}")
    return target


# -- the services --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="where the PNGs go (default docs/)")
    parser.add_argument("--root", type=Path, default=REALISTIC_ROOT,
                        help="the folder of the pipeline's checkpoint and spec, made and removed here "
                        "(default /var/lib/eos; one that exists already: the state folder instead)")
    args = parser.parse_args(argv)

    from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
    from airflow_provider_eos.devstack.broker import LocalKafka
    from tests.support.airflow_api import AirflowApi
    from tests.support.browser import Browser, chromium_path

    chromium = chromium_path()
    if chromium is None:
        raise SystemExit("no Chromium: `make install` (as root) installs Debian's chromium, or set $EOS_CHROMIUM")
    started = time.monotonic()
    out = args.out.resolve()
    state = Path(tempfile.mkdtemp(prefix="eos-screenshots-"))
    root, root_is_ours = _root(args.root, state)
    devstack = state / "devstack"
    kafka, airflow = LocalKafka(devstack, heap="384m"), LocalAirflow(devstack)
    try:
        with ExitStack() as stack:
            # Stopped in reverse order, on failure too: the browser, Airflow, then the broker.
            stack.callback(kafka.down)
            broker = kafka.up(stop_with_pid=os.getpid())
            _log(f"broker {broker.bootstrap_servers} (state {devstack})")
            stack.callback(airflow.down)
            specs = root / "pipelines"
            deployment = airflow.up(specs_dir=specs, bootstrap_servers=broker.bootstrap_servers,
                                    stop_with_pid=os.getpid())
            _log(f"Airflow {deployment.url}, pipelines folder {specs}")
            staging = state / "spec"
            staging.mkdir()
            pipeline = ExamplePipeline(broker.bootstrap_servers, root, staging)
            pipeline.produce_orders()
            _log(f"pipeline {pipeline.name}: checkpoint {pipeline.checkpoint}, batches 0..{LAST_BATCH}")
            api = stack.enter_context(AirflowApi(deployment.url, deployment.user, deployment.password()))
            browser = stack.enter_context(Browser(chromium, artifacts=out, viewport=VIEWPORT))
            shots = take_screenshots(browser, api, deployment, pipeline, out)
    finally:
        if root_is_ours:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    _log(f"{len(shots)} screenshots in {time.monotonic() - started:.0f}s: " + ", ".join(p.name for p in shots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
