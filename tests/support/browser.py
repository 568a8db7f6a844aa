"""A headless Chromium driving Airflow's UI (3.1 to 3.3) as a person would: log in, trigger, read the result.

Playwright for Python drives the system's Chromium (Debian's ``chromium`` package, installed by
``make install``); Playwright's own browser download cannot work here, so :func:`chromium_path`
finds the system binary (``$EOS_CHROMIUM`` overrides). Tests call :func:`require_chromium` first:
it skips with the reason when no browser is installed, except under CI, where it fails.

Selectors are what Airflow 3.1's and 3.3's UIs (``airflow/ui/dist``) both render: routes ``/dags/<dag>``,
``/dags/<dag>/runs/<run>``, ``/dags/<dag>/runs/<run>/tasks/<task>[/<tab route>]``; buttons by their
accessible name (the "Trigger Dag" button, the dialog's "Run Parameters" section and "Trigger"); the
trigger dialog's params are Airflow's "flexible form", one field per param with the id
``element_<param>`` (labels are used where Airflow ties them to the input; the Confirmation text
field's label is not tied to it in 3.3, hence the ids). Where the two UIs differ, both are handled:
an enum param is a react-select in 3.3 (a hidden input carries the value) and Chakra's select in 3.1
(a button ``select:element_<param>:trigger`` showing the value); 3.3 marks the run's and task's
header card and its state badge with test ids, 3.1 has none (the header is the box whose headings
the state badge sits beside: :data:`HEADER_BADGE_31`).

A session fixture keeps one :class:`Browser`::

    with Browser(artifacts=tmp_path / "screens") as browser:
        browser.login(base_url, "admin", password)
        browser.open_trigger_form("eos_manual_recovery")
        browser.fill_recovery_form(action="verify", dry_run=True, confirmation=None)
        run_id = browser.trigger()
        assert browser.wait_for_run_state("eos_manual_recovery", run_id) == "success"
        browser.open_task("eos_manual_recovery", run_id, "verify", tab="Rendered Templates")
        card = browser.rendered_field("result")
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

CHROMIUM_ENV = "EOS_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
TERMINAL_RUN_STATES = frozenset({"success", "failed"})
#: Airflow 3.1's run and task header (``HeaderCard``): headings (icon, title, subtitle) and then the
#: state badge, siblings in one row; 3.3 gives them test ids (``header-card``, ``state-badge``).
HEADER_BADGE_31 = "h2 ~ .chakra-badge"
# The tab routes of a task instance page (Airflow 3.3), by the tab's visible name.
TASK_TABS = {
    "Logs": "", "Rendered Templates": "rendered_templates", "Storage": "xcom", "XCom": "xcom",
    "Asset Events": "asset_events", "Audit Log": "events", "Code": "code", "Details": "details",
}


def chromium_path() -> str | None:
    """The system Chromium to drive: ``$EOS_CHROMIUM``, else the first of :data:`CHROMIUM_NAMES` on PATH."""
    configured = os.environ.get(CHROMIUM_ENV, "").strip()
    if configured:
        return configured if Path(configured).is_file() else None
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def require_chromium() -> str:
    """The Chromium binary, or skip the test with the reason (under CI, where it must run, fail instead)."""
    import pytest

    path = chromium_path()
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "Playwright is not installed: `make install` installs it with the `dev` extra"
    else:
        if path is not None:
            return path
        reason = ("no Chromium for the browser tests: `make install` installs Debian's `chromium` when it "
                  "runs as root (or with passwordless sudo); otherwise `apt-get install chromium`, or set "
                  f"${CHROMIUM_ENV} to a Chromium binary")
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


class Browser:
    """One headless Chromium with one page; always :meth:`stop` it (or use it as a context manager).

    :param executable: the Chromium binary; default :func:`chromium_path`.
    :param artifacts: where :meth:`screenshot` puts relative paths.
    :param timeout_s: how long a single UI step (a click, a page load) may take.
    """

    def __init__(self, executable: str | None = None, artifacts: Path | None = None,
                 timeout_s: float = 30.0, viewport: tuple[int, int] = (1400, 1000)) -> None:
        self.executable = executable or chromium_path()
        self.artifacts = artifacts
        self.timeout_ms = timeout_s * 1000
        self.viewport = {"width": viewport[0], "height": viewport[1]}
        self.base_url = ""
        self._playwright: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._page: Any = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Browser:
        """Launch headless Chromium and open a page."""
        if self.executable is None:
            raise RuntimeError(f"no Chromium found; install Debian's chromium or set ${CHROMIUM_ENV}")
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=["--disable-dev-shm-usage"])
            self.reset()
        except BaseException:
            self.stop()
            raise
        return self

    def reset(self) -> None:
        """A fresh browser context (no cookies: log in again) and page, e.g. between tests."""
        if self._context is not None:
            self._context.close()
        self._context = self._browser.new_context(viewport=self.viewport)
        self._context.set_default_timeout(self.timeout_ms)
        self._page = self._context.new_page()

    def stop(self) -> None:
        """Close the page, the browser and Playwright's driver; safe to call twice."""
        for closer in (lambda: self._context and self._context.close(),
                       lambda: self._browser and self._browser.close(),
                       lambda: self._playwright and self._playwright.stop()):
            with contextlib.suppress(Exception):  # keep closing the rest
                closer()
        self._context = self._browser = self._playwright = self._page = None

    def __enter__(self) -> Browser:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def page(self) -> Any:
        """The Playwright ``Page``, for what this helper does not cover."""
        if self._page is None:
            raise RuntimeError("the browser is not started")
        return self._page

    # -- navigation ------------------------------------------------------------------------

    def login(self, base_url: str, username: str, password: str) -> None:
        """Sign in on the SimpleAuthManager's login page (a no-op if the UI needs no login)."""
        self.base_url = base_url.rstrip("/")
        page = self.page
        page.goto(self.base_url + "/")
        page.wait_for_load_state("networkidle")
        if "/auth/login" not in page.url:
            return
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        try:
            page.wait_for_url(lambda url: "/auth/login" not in url)
        except Exception as error:
            raise AssertionError(f"login as {username!r} failed; the page says:\n{self.page_text()}") from error

    def goto(self, route: str) -> None:
        """Open a UI route (``/dags/...``) under the logged-in base URL and wait for it to settle."""
        self.page.goto(self.base_url + route)
        self.page.wait_for_load_state("networkidle")

    def open_dag(self, dag_id: str) -> None:
        self.goto(f"/dags/{quote(dag_id, safe='')}")

    def open_run(self, dag_id: str, run_id: str) -> None:
        self.goto(f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}")

    def open_task(self, dag_id: str, run_id: str, task_id: str, tab: str | None = None,
                  map_index: int | None = None) -> None:
        """Open a task instance's page (a mapped one's by ``map_index``); ``tab`` (e.g. ``"Rendered Templates"``,
        ``"Logs"``) is clicked by name."""
        route = f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}/tasks/{quote(task_id, safe='')}"
        self.goto(route if map_index is None else f"{route}/mapped/{map_index}")
        self._header_badge().wait_for()
        if tab:
            self.page.get_by_role("link", name=tab, exact=True).click()
            route = TASK_TABS.get(tab)
            if route:
                self.page.wait_for_url(lambda url: urlsplit(url).path.endswith("/" + route))
            self.page.wait_for_load_state("networkidle")

    # -- the trigger form ------------------------------------------------------------------

    def open_trigger_form(self, dag_id: str) -> None:
        """Open the DAG's page and its "Trigger Dag" dialog, with the Run Parameters section open."""
        self.open_dag(dag_id)
        # Its accessible name (aria-label) in 3.1 and 3.3; the dialog's submit button is "Trigger".
        self.page.get_by_role("button", name="Trigger Dag", exact=True).first.click()
        section = self._dialog().get_by_role("button", name="Run Parameters")
        section.wait_for()
        if section.get_attribute("aria-expanded") == "false":
            section.click()

    def _dialog(self) -> Any:
        return self.page.get_by_role("dialog")

    def _field(self, param: str) -> Any:
        return self._dialog().locator(f'[name="element_{param}"]')

    def _chakra_select(self, param: str) -> Any:
        """An enum param's select in Airflow 3.1 (Chakra's: a button showing the value, no named input)."""
        return self._dialog().locator(f'[id="select:element_{param}:trigger"]')

    def set_param(self, param: str, value: Any) -> None:
        """Set one param field as a person would: pick a select option, flip a switch, type text.

        ``None`` empties a text or number field; a select or switch needs a value.
        """
        self._field(param).or_(self._chakra_select(param)).first.wait_for(state="attached")
        if self._chakra_select(param).count():  # Airflow 3.1's select
            self._chakra_select(param).click()
            self.page.get_by_role("option", name=str(value), exact=True).click()
            if self.param_value(param) != str(value):
                raise AssertionError(f"param {param!r}: set {value!r}, the form shows {self.param_value(param)!r}")
            return
        field = self._field(param)
        kind = field.get_attribute("type") or ""
        if kind == "hidden":  # a select (react-select, Airflow 3.3): the hidden input carries the value
            self._dialog().locator(f'[id="element_{param}"]').click()
            self.page.get_by_role("option", name=str(value), exact=True).click()
        elif kind == "checkbox":  # a switch: click it when it is not already in the wanted state
            if field.is_checked() != bool(value):
                self._dialog().locator(f'[id="switch:element_{param}"]').click()
        else:
            field.fill("" if value is None else str(value))
        actual = self.param_value(param)
        wanted = bool(value) if kind == "checkbox" else ("" if value is None else str(value))
        if actual != wanted:
            raise AssertionError(f"param {param!r}: set {value!r}, the form shows {actual!r}")

    def param_value(self, param: str) -> str | bool:
        """What the form holds for ``param``: a switch's state, else the field's text (3.1's select: the
        value it shows)."""
        select = self._chakra_select(param)
        if select.count():
            return " ".join(select.inner_text().split())
        field = self._field(param)
        if field.get_attribute("type") == "checkbox":
            return field.is_checked()
        return field.input_value()

    def fill_recovery_form(self, pipeline: str | None = None, action: str | None = None,
                           dry_run: bool | None = None, confirmation: str | None = None,
                           target_batch: int | None = None, force: bool | None = None) -> None:
        """Fill ``eos_manual_recovery``'s fields; ``pipeline``, ``action``, ``dry_run`` and ``force`` are
        left as the form shows them when ``None``; ``confirmation`` and ``target_batch`` are always set
        (``None`` empties them)."""
        if pipeline is not None:
            self.set_param("pipeline", pipeline)
        if action is not None:
            self.set_param("action", action)
        if dry_run is not None:
            self.set_param("dry_run", dry_run)
        if force is not None:
            self.set_param("force", force)
        self.set_param("target_batch", target_batch)
        self.set_param("confirmation", confirmation)

    def trigger_button(self) -> Any:
        """The dialog's "Trigger" (submit) button."""
        return self._dialog().get_by_role("button", name="Trigger", exact=True)

    def trigger_enabled(self) -> bool:
        return self.trigger_button().is_enabled()

    def form_problems(self) -> list[str]:
        """What the form marks wrong: ``"<label>: <message>"`` per invalid field, then any error alert."""
        dialog = self._dialog()
        problems = []
        for group in dialog.locator('[data-scope="field"][data-part="root"][data-invalid]').all():
            label = " ".join(group.locator('[data-part="label"]').first.inner_text().replace("*", "").split())
            errors = group.locator('[data-part="error-text"]').all_inner_texts()
            problems.append(f"{label}: {' '.join(errors).strip() or 'invalid'}")
        problems += [" ".join(text.split()) for text in dialog.get_by_role("alert").all_inner_texts()]
        return problems

    def trigger(self) -> str:
        """Click Trigger; return the new run's id (Airflow opens the run's page)."""
        button = self.trigger_button()
        if not button.is_enabled():
            raise AssertionError(f"the Trigger button is disabled; the form shows: {self.form_problems()}")
        button.click()
        deadline = time.monotonic() + self.timeout_ms / 1000
        while time.monotonic() < deadline:
            parts = urlsplit(self.page.url).path.split("/runs/", 1)
            if len(parts) == 2 and parts[1]:
                return unquote(parts[1].split("/", 1)[0])
            failed = self.page.get_by_text("Failed to Trigger Dag")  # 3.3's toast; 3.1 shows it in the dialog
            if failed.count():
                raise AssertionError(f"the trigger failed: {' '.join(self.page_text().split())[-800:]}")
            self.page.wait_for_timeout(200)
        problems = self.form_problems() if self._dialog().count() else []
        raise AssertionError(f"no run page after Trigger (still at {self.page.url}; the form shows: {problems})")

    # -- reading results -------------------------------------------------------------------

    def _header_badge(self) -> Any:
        """The state badge of the open run's or task's header card (3.3's test ids, else 3.1's markup)."""
        tagged = self.page.get_by_test_id("header-card").get_by_test_id("state-badge")
        return tagged.or_(self.page.locator(HEADER_BADGE_31)).first

    def header_state(self) -> str:
        """The state badge of the open run or task page, normalised (``"success"``, ``"up_for_retry"``)."""
        badge = self._header_badge()
        badge.wait_for()
        if self.page.get_by_test_id("header-card").count():  # 3.3: only the tagged one, never a look-alike
            badge = self.page.get_by_test_id("header-card").get_by_test_id("state-badge").first
        return "_".join(badge.inner_text().strip().lower().split())

    def wait_for_run_state(self, dag_id: str, run_id: str, until: frozenset[str] | set[str] = TERMINAL_RUN_STATES,
                           timeout_s: float = 300, poll_s: float = 3) -> str:
        """Watch the run's page until its state is one of ``until``; return that state.

        The badge is read every half second (Airflow's page refreshes a running run's state itself) and the
        page reloaded every ``poll_s`` seconds, in case it does not: a reload costs the browser and the
        api-server far more than a read of the page.
        """
        deadline = time.monotonic() + timeout_s
        self.open_run(dag_id, run_id)
        reloaded = time.monotonic()
        state = ""
        while True:
            state = self.header_state()
            if state in until:
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} of {dag_id} still {state!r} after {timeout_s:.0f}s")
            self.page.wait_for_timeout(500)
            if time.monotonic() - reloaded >= poll_s:
                self.page.reload()
                self.page.wait_for_load_state("networkidle")
                reloaded = time.monotonic()

    def task_state(self, dag_id: str, run_id: str, task_id: str) -> str:
        """The task instance's state as its page shows it."""
        self.open_task(dag_id, run_id, task_id)
        return self.header_state()

    def rendered_field(self, name: str) -> str:
        """One field of the open "Rendered Templates" tab, as plain text (no line numbers)."""
        label = self.page.locator("td:first-child", has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
        row = self.page.locator("tr").filter(has=label).first
        row.locator("pre, code").first.wait_for()
        return row.evaluate(
            """row => {
                const value = row.querySelectorAll('td')[1];
                const code = value.querySelector('code');
                if (!code) return value.innerText;
                const lines = [...code.children].map(line => [...line.children]
                    .filter(part => getComputedStyle(part).userSelect !== 'none')
                    .map(part => part.textContent).join('').replace(/\\n$/, ''));
                return lines.join('\\n');
            }""")

    def page_text(self) -> str:
        """The visible text of the page (the main content if there is one)."""
        main = self.page.get_by_test_id("main-content")
        return main.inner_text() if main.count() else self.page.inner_text("body")

    def screenshot(self, path: str | Path, whole_dialog: bool = True) -> Path:
        """Save a PNG of the page; an open dialog is captured whole (the viewport grows to fit it)."""
        target = Path(path)
        if not target.is_absolute() and self.artifacts is not None:
            target = self.artifacts / target
        target.parent.mkdir(parents=True, exist_ok=True)
        dialog = self._dialog()
        if whole_dialog and dialog.count() and dialog.first.is_visible():
            height = dialog.first.evaluate("d => d.scrollHeight + 2 * d.getBoundingClientRect().top")
            self.page.set_viewport_size({"width": self.viewport["width"],
                                         "height": max(self.viewport["height"], int(height))})
            try:
                self.page.wait_for_timeout(300)
                self.page.screenshot(path=str(target))
            finally:
                self.page.set_viewport_size(self.viewport)
        else:
            self.page.screenshot(path=str(target), full_page=True)
        return target
