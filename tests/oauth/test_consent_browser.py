"""The built-in authorization server's consent page in a real browser: Debian's Chromium,
headless, driven by Selenium through Debian's chromedriver, with JavaScript turned off for every
page (a browser setting, proven on a probe page before any test), so what passes here works
without script:

  - the page names the client (as registered, markup shown as text), where it sends the person
    back and the scopes; it has `lang`, a title and one h1, and its accessibility tree names
    both buttons;
  - Approve and Deny are submit buttons of a POST form, reached by Tab in that order;
  - approving (by keyboard: Tab, Enter; by mouse: a click) goes to the upstream's login and
    consent forms, back through /oauth/callback, and ends at the client's redirect URI with a
    code the token endpoint takes, the client's state and `iss`;
  - Deny ends at the redirect URI with error=access_denied;
  - a page of another origin that frames the consent page shows nothing of it, while a
    frameable page in the same frame set loads;
  - axe-core finds no violation (the one check run with JavaScript on: axe is a script).

The client's redirect URI is a small HTTP server started here on 127.0.0.1, which records the
query the browser brings. A missing Chromium, chromedriver or Selenium fails every test:
scripts/oauth-tests.sh installs them.
"""

import html
import json
import os
import shutil
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pytest

import oauth_support as s
from test_builtin_as import authorization_url, exchange, facade_basket, origin, register, upstream  # noqa: F401

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as error:  # a failure in the fixture below, not a collection error
    webdriver = None
    SELENIUM_MISSING = str(error)

CHROMIUM = os.environ.get("OAUTH_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("OAUTH_CHROMEDRIVER", "/usr/bin/chromedriver")
# The flags this closed network needs: without the background-networking ones Chromium's own
# connections are refused, many at a time.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1024,768",
]
CLIENT_NAME = "Browser <b>test</b> & client"
WAIT = 15


# --- The client's side: a redirect URI that records, a page that frames ------------------


class ClientSite:
    """A loopback HTTP server playing the client: `/callback` records the query the browser
    brings, `/frame?src=URL` frames URL next to `/control` (frameable), `/probe` has a script
    that would change its title."""

    def __init__(self):
        self.received: list[dict[str, str]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/callback":
                    site.received.append(query)
                    body = "<h1>callback received</h1>"
                elif url.path == "/frame":
                    body = (
                        f'<h1>framer</h1><iframe id="consent" title="consent" src="{html.escape(query["src"])}"></iframe>'
                        f'<iframe id="control" title="control" src="{site.url}/control"></iframe>'
                    )
                elif url.path == "/control":
                    body = "<h1>control frame</h1>"
                elif url.path == "/probe":
                    body = "<h1>probe</h1><script>document.title = 'script ran'</script>"
                else:
                    self.send_error(404)
                    return
                page = f'<!DOCTYPE html><html lang="en"><head><title>client site</title></head><body>{body}</body></html>'
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(page.encode())

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.callback = f"{self.url}/callback"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def site():
    site = ClientSite()
    yield site
    site.close()


@pytest.fixture(scope="module")
def server(upstream):  # noqa: F811 (the imported fixture)
    with facade_basket(upstream) as url:
        yield url


# --- The browser ----------------------------------------------------------------------------


def chromium(script: bool):
    """Debian's Chromium, headless, in a new profile; page scripts off unless `script`."""
    if webdriver is None:
        pytest.fail(f"Selenium is not installed ({SELENIUM_MISSING}): run scripts/oauth-tests.sh, which installs it")
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            pytest.fail(f"no {path}: install Debian's {package} (scripts/oauth-tests.sh does)")
    profile = tempfile.mkdtemp(prefix="consent-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    if not script:
        # The content setting a person changes to block JavaScript: no page script runs, on
        # any site. The driver's own commands still reach the page through DevTools.
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    # The performance log holds every request the page made: the redirects followed.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    logs = Path(os.environ.get("OAUTH_LOGS", "/tmp"))
    service = Service(CHROMEDRIVER, log_output=str(logs / f"chromedriver-{'js' if script else 'nojs'}.log"))
    driver = webdriver.Chrome(options=options, service=service)
    return driver, profile


@pytest.fixture(scope="module")
def browser(site):
    driver, profile = chromium(script=False)
    try:
        driver.get(f"{site.url}/probe")
        assert driver.title == "client site", f"a page script ran ({driver.title!r}): JavaScript is not off"
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def fresh(browser):
    """The browser with no cookie of any site (neither this server's nor the upstream's
    session) and an empty request log."""
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    browser.get_log("performance")
    return browser


# --- Helpers --------------------------------------------------------------------------------


class Flow:
    """One authorization request by a newly registered client whose redirect URI is `site`'s."""

    def __init__(self, server: str, site: ClientSite):
        self.client = register(server, client_name=CLIENT_NAME, redirect_uris=[site.callback])
        self.verifier, challenge = s.pkce()
        self.state = "st-" + os.urandom(6).hex()
        self.url = authorization_url(server, self.client["client_id"], challenge,
                                     redirect_uri=site.callback, state=self.state)


def page_summary(driver) -> str:
    try:
        text = driver.find_element(By.TAG_NAME, "body").text
    except Exception:  # noqa: BLE001 (an error page of the browser's own)
        text = "(no body)"
    return f"at {driver.current_url}: {text[:600]!r}"


def wait_until_at(driver, prefix: str, what: str):
    try:
        WebDriverWait(driver, WAIT).until(lambda d: d.current_url.startswith(prefix))
    except TimeoutException:
        raise AssertionError(f"the browser never reached {what} ({prefix}); it is {page_summary(driver)}") from None


def navigations(driver) -> list[tuple[str, str]]:
    """Every document the browser asked for since the last look, in order, redirects
    followed: (method, URL without its query)."""
    found = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent" and message["params"].get("type") == "Document":
            request = message["params"]["request"]
            found.append((request["method"], request["url"].split("?")[0]))
    return found


def described(driver, term: str) -> list[str]:
    """The texts of a description list's `dd`s for `term`: those up to the next `dt`."""
    xpath = f'//dt[.="{term}"]/following-sibling::dd[preceding-sibling::dt[1][.="{term}"]]'
    return [dd.text for dd in driver.find_elements(By.XPATH, xpath)]


def key(driver, *keys):
    ActionChains(driver).send_keys(*keys).perform()


def focused(driver):
    return driver.switch_to.active_element


def consent_buttons(driver):
    """The consent form's Approve and Deny: submit buttons of a form that POSTs, named
    `decision`."""
    forms = driver.find_elements(By.TAG_NAME, "form")
    assert len(forms) == 1, f"expected one form, found {len(forms)}; the page is {page_summary(driver)}"
    form = forms[0]
    assert (form.get_dom_attribute("method") or "").lower() == "post", form.get_dom_attribute("method")
    buttons = {}
    for value in ("approve", "deny"):
        found = form.find_elements(By.CSS_SELECTOR, f'button[type="submit"][name="decision"][value="{value}"]')
        assert len(found) == 1, f"no submit button decision={value} in the form: {form.get_attribute('outerHTML')[:800]}"
        buttons[value] = found[0]
    return buttons["approve"], buttons["deny"]


def upstream_login(driver, upstream_issuer: str, login: str):
    """oidc-provider's devInteractions: the login form (any login is the subject), then its
    consent form, each submitted with a click on its submit button."""
    wait_until_at(driver, upstream_issuer, "the upstream's login")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_elements(By.NAME, "login"))
    driver.find_element(By.NAME, "login").send_keys(login)
    driver.find_element(By.NAME, "password").send_keys("any password")
    driver.find_element(By.CSS_SELECTOR, 'form button[type="submit"]').click()
    WebDriverWait(driver, WAIT).until(
        lambda d: not d.current_url.startswith(upstream_issuer) or d.find_elements(By.NAME, "prompt"))
    if driver.current_url.startswith(upstream_issuer):
        driver.find_element(By.CSS_SELECTOR, 'form button[type="submit"]').click()


def ax_nodes(driver) -> list[dict]:
    """The page's accessibility tree as Chromium gives it to screen readers (DevTools, no page
    script)."""
    return [n for n in driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"] if not n.get("ignored")]


def ax_value(node: dict, field: str):
    return node.get(field, {}).get("value")


def ax_property(node: dict, name: str):
    return next((p["value"].get("value") for p in node.get("properties", []) if p["name"] == name), None)


# --- The page -------------------------------------------------------------------------------


def test_the_consent_page_names_the_client_where_it_sends_you_and_the_scopes(server, site, fresh):
    flow = Flow(server, site)
    fresh.get(flow.url)
    assert fresh.find_element(By.TAG_NAME, "h1").text == f"Allow {CLIENT_NAME} to use {urlparse(server).netloc}?"
    shown = {dt.text: described(fresh, dt.text) for dt in fresh.find_elements(By.TAG_NAME, "dt")}
    assert shown["Application"] == [f"{CLIENT_NAME} (client id {flow.client['client_id']})"], shown
    assert shown["Sends you back to"] == ["127.0.0.1"], shown
    assert shown["Permissions"] == s.SCOPES.split(), shown
    # The redirect URI is loopback: the page warns that any program on this device could listen.
    notes = fresh.find_elements(By.CSS_SELECTOR, '[role="note"]')
    assert len(notes) == 1 and "this device" in notes[0].text, page_summary(fresh)
    # The CSRF cookie the answer must carry: set, out of scripts' reach, not sent cross-site.
    # One per consent page (a second tab does not overwrite the first's): mcp-oauth-csrf-<id>.
    csrf = [c for c in fresh.get_cookies() if c["name"].startswith("mcp-oauth-csrf-")]
    assert len(csrf) == 1, "the consent page set no mcp-oauth-csrf-… cookie: its answer will be refused"
    cookie = csrf[0]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax", cookie


def test_the_consent_page_is_accessible_without_script(server, site, fresh):
    fresh.get(Flow(server, site).url)
    assert fresh.find_element(By.TAG_NAME, "html").get_dom_attribute("lang") == "en"
    assert fresh.title == f"Allow {CLIENT_NAME}?"
    assert len(fresh.find_elements(By.TAG_NAME, "h1")) == 1
    assert fresh.find_elements(By.TAG_NAME, "main"), "no main landmark"
    approve, deny = consent_buttons(fresh)
    assert approve.text == "Approve and log in" and deny.text == "Deny"
    assert approve.is_displayed() and approve.is_enabled() and deny.is_displayed() and deny.is_enabled()
    # What a screen reader gets: one level-1 heading, both buttons named and focusable, and no
    # control without a name.
    nodes = ax_nodes(fresh)
    headings = [n for n in nodes if ax_value(n, "role") == "heading"]
    assert [ax_property(n, "level") for n in headings] == [1], headings
    buttons = {ax_value(n, "name"): n for n in nodes if ax_value(n, "role") == "button"}
    assert set(buttons) == {"Approve and log in", "Deny"}, list(buttons)
    assert all(ax_property(n, "focusable") for n in buttons.values()), buttons
    controls = [n for n in nodes if ax_value(n, "role") in ("button", "link", "textbox", "checkbox", "combobox")]
    assert all(ax_value(n, "name") for n in controls), controls
    # The keyboard: Tab reaches Approve, then Deny; Shift+Tab goes back.
    key(fresh, Keys.TAB)
    assert focused(fresh) == approve, f"Tab focused {focused(fresh).get_attribute('outerHTML')[:200]}"
    key(fresh, Keys.TAB)
    assert focused(fresh) == deny, f"Tab focused {focused(fresh).get_attribute('outerHTML')[:200]}"
    ActionChains(fresh).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    assert focused(fresh) == approve


# --- The flow -------------------------------------------------------------------------------


@pytest.mark.parametrize("by", ["keyboard", "mouse"])
def test_approving_goes_through_the_upstream_login_and_back_with_a_code(server, upstream, site, fresh, by):  # noqa: F811
    flow = Flow(server, site)
    fresh.get(flow.url)
    approve, _ = consent_buttons(fresh)
    if by == "keyboard":
        key(fresh, Keys.TAB)
        assert focused(fresh) == approve
        key(fresh, Keys.ENTER)
    else:
        approve.click()
    upstream_login(fresh, upstream, login=f"browser-{by}")
    wait_until_at(fresh, site.callback, "the client's redirect URI")
    # The answer spent the CSRF cookie, and the callback the login's binding cookie.
    left = [c["name"] for c in fresh.get_cookies() if c["name"].startswith("mcp-oauth-")]
    assert left == [], left
    back = site.received[-1]
    assert set(back) == {"code", "state", "iss"}, back
    assert back["state"] == flow.state and back["iss"] == origin(server), back
    # The browser went to the upstream and came back through this server's callback.
    stops = navigations(fresh)
    authorize = f"{origin(server)}/oauth/authorize"
    assert stops[:2] == [("GET", authorize), ("POST", authorize)], stops
    assert stops[-2:] == [("GET", f"{origin(server)}/oauth/callback"), ("GET", site.callback)], stops
    at_upstream = stops[2:-2]
    assert all(url.startswith(upstream) for _, url in at_upstream), stops
    # Its two forms (login, consent) submitted: the browser's own POSTs, without script.
    assert [method for method, _ in at_upstream].count("POST") == 2, stops
    # The code is real: the token endpoint takes it, for the person who logged in upstream.
    r = exchange(server, flow.client["client_id"], back["code"], flow.verifier, redirect_uri=site.callback)
    assert r.status_code == 200, r.text
    _, claims = s.jws_parts(r.json()["access_token"])
    assert claims["sub"] == f"browser-{by}" and claims["client_id"] == flow.client["client_id"], claims


def test_deny_goes_back_to_the_client_with_access_denied(server, site, fresh):
    flow = Flow(server, site)
    fresh.get(flow.url)
    _, deny = consent_buttons(fresh)
    deny.click()
    wait_until_at(fresh, site.callback, "the client's redirect URI")
    back = site.received[-1]
    assert back["error"] == "access_denied" and "code" not in back, back
    assert back["state"] == flow.state and back["iss"] == origin(server), back
    authorize = f"{origin(server)}/oauth/authorize"
    assert navigations(fresh) == [("GET", authorize), ("POST", authorize), ("GET", site.callback)]


def test_another_origin_cannot_frame_the_consent_page(server, site, fresh):
    flow = Flow(server, site)
    # localhost is another origin (and site) than the server's 127.0.0.1.
    framer = f"http://localhost:{site.port}/frame?src={quote(flow.url, safe='')}"
    # get() returns at the framer's load event, which waits for its frames.
    fresh.get(framer)
    assert fresh.find_element(By.TAG_NAME, "h1").text == "framer"
    fresh.switch_to.frame("control")
    control = [h.text for h in fresh.find_elements(By.TAG_NAME, "h1")]
    fresh.switch_to.default_content()
    assert control == ["control frame"], "the framer's own frameable page did not load: the check proves nothing"
    fresh.switch_to.frame("consent")
    framed = fresh.find_elements(By.TAG_NAME, "form") + fresh.find_elements(By.TAG_NAME, "button")
    text = fresh.find_element(By.TAG_NAME, "body").text if fresh.find_elements(By.TAG_NAME, "body") else ""
    fresh.switch_to.default_content()
    assert not framed and CLIENT_NAME not in text, f"the consent page rendered inside another origin's frame: {text[:300]!r}"
    # The browser was asked for it, and refused to show it.
    assert ("GET", f"{origin(server)}/oauth/authorize") in navigations(fresh)


# --- An automated check, with script on --------------------------------------------------


def test_axe_finds_no_accessibility_violation(server, site):
    axe = Path(os.environ["OAUTH_NODE_DIR"]) / "node_modules" / "axe-core" / "axe.min.js"
    assert axe.is_file(), f"no {axe}: scripts/oauth-tests.sh installs axe-core from tests/oauth/package-lock.json"
    driver, profile = chromium(script=True)
    try:
        driver.get(Flow(server, site).url)
        assert driver.find_elements(By.TAG_NAME, "form"), page_summary(driver)
        driver.execute_script(axe.read_text())
        result = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {resultTypes: ['violations']})"
            "  .then((r) => done({violations: r.violations.map((v) => ({id: v.id, impact: v.impact,"
            "    help: v.help, nodes: v.nodes.map((n) => n.html)})), passes: r.passes.length}))"
            "  .catch((e) => done({error: String(e)}));")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    assert "error" not in result, result
    assert result["violations"] == [], result["violations"]
    assert result["passes"] > 10, result
