"""The web console (sqlfront.console) in a real headless Chromium: Debian's ``chromium``
and ``chromium-driver`` (``make browser-deps`` installs them), driven by Selenium from
PyPI. Skipped where they are not installed. A screenshot of each page is saved under the
test's output directory (``tmp_path``)."""

from __future__ import annotations

import shutil

import pytest

from server import long_query, run_in_background, wait_for

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
LONG = long_query(301)


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("Debian's chromium and chromium-driver are not installed (make browser-deps)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def _page(browser, server, page: str) -> None:
    browser.get(f"{server.console_url}/#{page}")


def _text(browser, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, element_id).text


def test_console_shows_clusters_sessions_and_sql(browser, server, conn, tmp_path):
    from selenium.webdriver.common.by import By

    conn.execute("CREATE CLUSTER browser_c REPLICAS ()")
    try:
        _page(browser, server, "clusters")
        assert wait_for(lambda: "browser_c" in _text(browser, "clusters-table"), 30)
        assert "online" in _text(browser, "clusters-table")
        assert wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#cpu-plot .main-svg"), 30)  # Plotly drew
        browser.save_screenshot(str(tmp_path / "clusters.png"))
        _page(browser, server, "sessions")
        assert wait_for(lambda: str(conn.info.backend_pid) in _text(browser, "sessions-table"), 30)
        browser.save_screenshot(str(tmp_path / "sessions.png"))
        _page(browser, server, "materialized-views")
        assert wait_for(lambda: "local_lag" in _text(browser, "mv-table"), 30)
        browser.save_screenshot(str(tmp_path / "materialized-views.png"))
        _page(browser, server, "sql")
        box = browser.find_element(By.ID, "sql-text")
        box.clear()
        box.send_keys("SELECT name FROM mz_clusters ORDER BY name")
        browser.find_element(By.ID, "sql-run").click()
        assert wait_for(lambda: "browser_c" in _text(browser, "sql-result"), 30)
        browser.find_element(By.ID, "sql-explain").click()
        assert wait_for(lambda: "mz_clusters" in _text(browser, "sql-result"), 30)
        browser.save_screenshot(str(tmp_path / "sql.png"))
    finally:
        conn.execute("DROP CLUSTER browser_c")


def test_cancel_button_stops_a_running_query(browser, server, tmp_path):
    from selenium.webdriver.common.by import By

    t, outcome = run_in_background(server, LONG)
    _page(browser, server, "queries")
    assert wait_for(lambda: "generate_series(1, 301)" in _text(browser, "running-table"), 30)
    browser.save_screenshot(str(tmp_path / "queries.png"))
    from selenium.common.exceptions import StaleElementReferenceException

    def click_cancel() -> bool:  # the page redraws its tables every few seconds: retry a stale row
        try:
            row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#running-table tr")
                       if "generate_series(1, 301)" in r.text)
            row.find_element(By.CSS_SELECTOR, "button.cancel").click()
            return True
        except (StaleElementReferenceException, StopIteration):
            return False

    assert wait_for(click_cancel, 30)
    t.join(60)
    assert outcome == {"sqlstate": "57014"}
    assert wait_for(lambda: "canceled" in _text(browser, "recent-table"), 30)
