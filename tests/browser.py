"""A real headless chromium (Debian's chromium + chromium-driver) driven by Selenium, for
the tests of the HTML pictures. Absent: the tests skip with the reason, except under CI,
where they fail (CI must run them)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def require_browser() -> None:
    missing = [name for name, path in (("chromium", CHROMIUM), ("chromedriver", DRIVER)) if not path]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip)")
    if missing:
        reason = f"no {', '.join(missing)}: ./install.sh --test installs Debian's chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


BROWSER_GROUP = pytest.mark.xdist_group("browser")   # mark tests that use it: xdist runs them on one worker
_shared: Any = None


@contextmanager
def chromium() -> Iterator[Any]:
    """The session's headless chromium for a with-block: on a blank page, one window, no
    cookies, the console and network logs of earlier blocks drained. Started by the first block
    of this process, quit when the session ends (a crashed one is replaced); tests using it
    carry ``BROWSER_GROUP``, so that under xdist one worker runs them all, with one browser."""
    driver = _session_chromium()
    try:
        yield driver
    finally:
        _reset(driver)


def _session_chromium() -> Any:
    global _shared
    from selenium.common.exceptions import WebDriverException
    if _shared is not None:
        try:
            _reset(_shared)
            return _shared
        except WebDriverException:
            quit_shared()
    import services
    _shared = start_chromium(own_group=True)
    # killed by the session's reaper should this process die before quit_shared (one per process)
    services.register(f"browser-{os.getpid()}", {"kill_groups": [_shared.service.process.pid]})
    return _shared


def _reset(driver) -> None:
    handles = driver.window_handles
    for handle in handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(handles[0])
    driver.get("about:blank")
    driver.delete_all_cookies()
    driver.set_window_size(1280, 1000)
    driver.get_log("browser")
    driver.get_log("performance")


def quit_shared() -> None:
    """Quit the session's chromium of this process, if it started one."""
    global _shared
    if _shared is not None:
        try:
            _shared.quit()
        finally:
            _shared = None


def start_chromium(own_group: bool = False):
    """A headless chromium that keeps the browser console and the network events; with
    ``own_group``, chromedriver and its browser run in a process group of their own."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # --enable-unsafe-swiftshader: WebGL (plotly's scattergl) in software, which chromium no
    # longer falls back to unasked; the pages under test are our own
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--enable-unsafe-swiftshader",
                "--no-first-run", "--disable-background-networking", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=DRIVER, popen_kw={"start_new_session": True} if own_group else {})
    return webdriver.Chrome(service=service, options=options)


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for (Chrome's performance log: Network.requestWillBeSent)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def draw_every_plot(driver, timeout: float = 60.0) -> None:
    """Scroll every chart (div.plot) into view, as a reader would, and wait until it is drawn:
    the pages draw a chart when it comes near the viewport. Fails on a chart never drawn."""
    from selenium.webdriver.support.ui import WebDriverWait
    for plot in driver.find_elements("css selector", "div.plot"):
        driver.execute_script("arguments[0].scrollIntoView();", plot)
        WebDriverWait(driver, timeout).until(lambda d, p=plot: d.execute_script("return !!arguments[0].data;", p),
                                             f"chart {plot.get_attribute('id')} not drawn when scrolled to")
    driver.execute_script("window.scrollTo(0, 0);")


def drawn_plots(driver) -> list[str]:
    """The ids of the charts drawn so far."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('div.plot')).filter(p => p.data).map(p => p.id);")


def plot_traces(driver) -> list[int]:
    """For every plotly plot on the page, how many traces it drew (every chart scrolled to first)."""
    draw_every_plot(driver)
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => (p.data || []).length);")


def click_change_point(driver, change_id: str) -> None:
    """Click, with the mouse, the diamond of change ``change_id`` on a history page (the
    chart scrolled into view and drawn first), as a reader would."""
    from selenium.webdriver.common.action_chains import ActionChains
    draw_every_plot(driver)
    marker = driver.execute_script("""
        for (const trace of document.querySelectorAll('.scatterlayer .trace')) {
            const t = trace.__data__ && trace.__data__[0] && trace.__data__[0].trace;
            if (!t || t.name !== 'change point') continue;
            const at = t.text.findIndex(s => s.startsWith('change ' + arguments[0]));
            if (at >= 0) return trace.querySelectorAll('path.point')[at];
        }
        return null;""", change_id)
    assert marker is not None, f"no marker of change {change_id} on the page"
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", marker)
    ActionChains(driver).move_to_element(marker).pause(0.3).click().perform()
