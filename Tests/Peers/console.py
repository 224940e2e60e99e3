#!/usr/bin/env python3
"""The admin console in a real browser: headless Chromium driven by Selenium
against the real binary, with a gorush stand-in.

    console.py BIN [SCREENSHOT_DIR]

An editor signs in, creates an alert, adds a Spanish translation, publishes
it (the public feed, decoded by gtfs-realtime-bindings, carries both
languages), sends it to test devices and watches the progress reach done
without reloading. A viewer cannot publish; a form without its CSRF token is
refused; logging out ends the session. Every page is screenshotted on a
desktop and some on a phone-sized window into SCREENSHOT_DIR (docs/admin).
"""
import http.cookiejar
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402
from google.transit import gtfs_realtime_pb2  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
SHOTS = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(base.WORK, "shots")
os.makedirs(SHOTS, exist_ok=True)
check = base.check
PASSWORD = "correct horse battery staple"


def cli(database, *arguments, password=None):
    done = subprocess.run([BIN, *arguments, "--database", database], capture_output=True, text=True,
                          input=(password + "\n") if password else None)
    check(done.returncode == 0, f"sidecar {' '.join(arguments)}: {done.stderr}")
    return done.stdout


def browser():
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                     "--force-device-scale-factor=1", "--lang=en-US"]:
        options.add_argument(argument)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.implicitly_wait(5)
    return driver


def shoot(driver, name, phone=False):
    """A full-page screenshot (the window grown to the page's height)."""
    width = 390 if phone else 1280
    driver.set_window_size(width, 900)
    height = driver.execute_script("return Math.ceil(document.body.getBoundingClientRect().height)")
    driver.set_window_size(width, min(max(height + 40, 600), 6000))
    driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
    driver.set_window_size(1280, 900)


def sign_in(driver, url, email):
    driver.get(url + "/admin")
    check("/admin/login" in driver.current_url, f"not sent to sign in: {driver.current_url}")
    driver.find_element(By.NAME, "email").send_keys(email)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    WebDriverWait(driver, 10).until(lambda d: "/admin/login" not in d.current_url)


def feed(url):
    with urllib.request.urlopen(url + "/api/v1/regions/1/alerts", timeout=10) as response:
        message = gtfs_realtime_pb2.FeedMessage()
        message.ParseFromString(response.read())
        return message


def refused_post(target, fields, session, what):
    """POSTs a form with a session cookie; the console must answer 403."""
    request = urllib.request.Request(target, data=urllib.parse.urlencode(fields).encode(), method="POST",
                                     headers={"Cookie": f"sidecar_session={session}", "Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.urlopen(request, timeout=10)
        base.fail(f"{what} was accepted")
    except urllib.error.HTTPError as error:
        check(error.code == 403, f"{what} answered {error.code}")


def main():
    database = os.path.join(base.WORK, "console.sqlite3")
    cli(database, "region", "set", "--id", "1", "--agency-id", "1", "--timezone", "America/Los_Angeles")
    cli(database, "user", "create", "--email", "editor@example.org", "--role", "editor", password=PASSWORD)
    cli(database, "user", "create", "--email", "viewer@example.org", "--role", "viewer", "--region", "1", password=PASSWORD)
    cli(database, "user", "create", "--email", "admin@example.org", "--role", "admin", password=PASSWORD)
    gorush = base.Gorush()
    sidecar = base.Sidecar(database, "--gorush-url", gorush.url, "--push-registration-limit", "0")
    url = f"http://127.0.0.1:{sidecar.port}"
    # Riders' devices: five test devices (two in Spanish) and some others.
    for number in range(12):
        fields = {"token": f"device-{number}", "operating_system": "ios" if number % 3 else "android",
                  "locale": "es-US" if number % 4 == 0 else "en-US", "test_device": "true" if number < 5 else "false"}
        if number < 5:
            fields["description"] = f"Test phone {number}"
        status, _ = sidecar.request("POST", "/api/v2/regions/1/push_registrations", urllib.parse.urlencode(fields),
                                    {"Content-Type": "application/x-www-form-urlencoded"})
        check(status == 204, f"registration {number}: {status}")
    driver = browser()
    try:
        driver.get(url + "/admin/login")
        shoot(driver, "login")
        shoot(driver, "login-phone", phone=True)
        sign_in(driver, url, "editor@example.org")
        check(driver.current_url.endswith("/admin/regions/1") or "/admin" in driver.current_url, driver.current_url)
        driver.get(url + "/admin/regions/1")
        check("Registered devices" in driver.page_source, "no dashboard")
        shoot(driver, "dashboard")
        shoot(driver, "dashboard-phone", phone=True)

        # Create an alert.
        driver.get(url + "/admin/regions/1/alerts/new")
        driver.find_element(By.NAME, "header").send_keys("Route 44 detoured at 45th St")
        driver.find_element(By.NAME, "description").send_keys("Buses skip 45th St until Friday; board at 46th St.")
        Select(driver.find_element(By.NAME, "cause")).select_by_value("CONSTRUCTION")
        Select(driver.find_element(By.NAME, "effect")).select_by_value("DETOUR")
        Select(driver.find_element(By.NAME, "severity")).select_by_value("WARNING")
        start = driver.find_element(By.NAME, "start")
        driver.execute_script("arguments[0].value = '2026-11-01T08:00'", start)
        shoot(driver, "alert-new")
        driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        WebDriverWait(driver, 10).until(lambda d: re.search(r"/admin/alerts/\d+", d.current_url))
        alert_id = re.search(r"/admin/alerts/(\d+)", driver.current_url).group(1)
        check("Alert created as a draft" in driver.page_source, "no confirmation")

        # Spanish translation.
        form = driver.find_element(By.CSS_SELECTOR, "form[action$='/translations']")
        form.find_element(By.NAME, "language").send_keys("es")
        form.find_element(By.NAME, "header").send_keys("Ruta 44 desviada en la calle 45")
        form.find_element(By.NAME, "description").send_keys("Los autobuses no paran en la calle 45 hasta el viernes.")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        WebDriverWait(driver, 10).until(lambda d: "Translation saved" in d.page_source)

        # Publish.
        driver.find_element(By.XPATH, "//button[normalize-space()='Publish']").click()
        WebDriverWait(driver, 10).until(lambda d: "Published: the alert is in the feed" in d.page_source)
        message = feed(url)
        entities = [e for e in message.entity if e.id == f"Alert_{alert_id}"]
        check(len(entities) == 1, f"alert {alert_id} not in the feed: {[e.id for e in message.entity]}")
        header = {t.language: t.text for t in entities[0].alert.header_text.translation}
        check(header == {"en": "Route 44 detoured at 45th St", "es": "Ruta 44 desviada en la calle 45"}, f"feed header {header}")
        check(entities[0].alert.cause == gtfs_realtime_pb2.Alert.CONSTRUCTION, "cause")

        # Send to test devices and watch the progress reach done, live.
        driver.find_element(By.PARTIAL_LINK_TEXT, "Send to test devices").click()
        check("5 test devices" in driver.page_source, "the confirmation does not state the audience count")
        shoot(driver, "send-confirm")
        driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        WebDriverWait(driver, 10).until(lambda d: "Sending started" in d.page_source)
        url_before = driver.current_url
        WebDriverWait(driver, 20).until(expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, "[data-send-id] [data-field='status']"), "done"))
        check(driver.current_url == url_before, "the page reloaded")
        delivered = driver.find_element(By.CSS_SELECTOR, "[data-send-id] [data-field='delivered']").text
        check(delivered == "5", f"delivered {delivered}")
        check(sorted(gorush.pushes) == [f"device-{n}" for n in range(5)], f"gorush got {sorted(gorush.pushes)}")
        driver.get(url + f"/admin/alerts/{alert_id}")
        shoot(driver, "alert")
        shoot(driver, "alert-phone", phone=True)
        check("Send to everyone" not in driver.page_source, "an editor is offered a send to everyone")

        driver.get(url + "/admin/regions/1/alerts")
        shoot(driver, "alerts")
        driver.get(url + "/admin/regions/1/surveys/new")
        shoot(driver, "survey-new")
        driver.find_element(By.NAME, "name").send_keys("How was your trip?")
        driver.find_element(By.NAME, "new_study").send_keys("Winter 2026 rider survey")
        driver.find_element(By.NAME, "q0_label").send_keys("How was your trip today?")
        Select(driver.find_element(By.NAME, "q0_type")).select_by_value("radio")
        driver.find_element(By.NAME, "q0_options").send_keys("Great\nFine\nNot good")
        driver.find_element(By.NAME, "q1_label").send_keys("Anything else?")
        driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        WebDriverWait(driver, 10).until(lambda d: "Survey saved" in d.page_source)
        shoot(driver, "survey")
        driver.get(url + "/admin/regions/1/surveys")
        shoot(driver, "surveys")
        driver.get(url + "/admin/regions/1/ghost-bus")
        shoot(driver, "ghost-bus")
        driver.get(url + "/admin/audit")
        check("alert.publish" in driver.page_source and "user:editor@example.org" in driver.page_source, "audit log")
        shoot(driver, "audit")

        # A form without its CSRF token, posted with the editor's session cookie, is refused.
        cookies = {c["name"]: c["value"] for c in driver.get_cookies()}
        refused_post(url + f"/admin/alerts/{alert_id}/unpublish", {}, cookies["sidecar_session"], "a POST without CSRF token")
        check(len(feed(url).entity) == 1, "the alert was unpublished by a forged form")

        # Logout ends the session: the old cookie no longer opens a page.
        driver.find_element(By.XPATH, "//button[normalize-space()='Log out']").click()
        WebDriverWait(driver, 10).until(lambda d: "You are signed out" in d.page_source)
        stale = urllib.request.Request(url + "/admin/regions/1", headers={"Cookie": f"sidecar_session={cookies['sidecar_session']}"})
        opener = urllib.request.build_opener(NoRedirect())
        try:
            opener.open(stale, timeout=10)
            base.fail("the old session still works")
        except urllib.error.HTTPError as error:
            check(error.code == 303 and "/admin/login" in error.headers["Location"], f"old session: {error.code}")

        # A viewer reads but cannot publish.
        sign_in(driver, url, "viewer@example.org")
        driver.get(url + f"/admin/alerts/{alert_id}")
        check("Route 44 detoured" in driver.page_source, "the viewer cannot read the alert")
        check(not driver.find_elements(By.XPATH, "//button[normalize-space()='Publish' or normalize-space()='Unpublish']"),
              "a viewer is offered publishing")
        viewer_cookie = {c["name"]: c["value"] for c in driver.get_cookies()}["sidecar_session"]
        page = urllib.request.urlopen(urllib.request.Request(url + "/admin/audit", headers={"Cookie": f"sidecar_session={viewer_cookie}"}))
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.read().decode()).group(1)
        refused_post(url + f"/admin/alerts/{alert_id}/unpublish", {"csrf": csrf}, viewer_cookie, "a viewer's unpublish")
        check(len(feed(url).entity) == 1, "a viewer changed the feed")
        shoot(driver, "alert-viewer")
        driver.find_element(By.XPATH, "//button[normalize-space()='Log out']").click()

        # The admin's pages: API keys and sending to everyone.
        sign_in(driver, url, "admin@example.org")
        driver.get(url + "/admin")
        shoot(driver, "regions")
        driver.get(url + "/admin/keys")
        driver.find_element(By.NAME, "name").send_keys("CAD integration")
        driver.find_element(By.ID, "field-region_1").click()
        driver.find_element(By.CSS_SELECTOR, "form[action='/admin/keys'] button[type=submit]").click()
        WebDriverWait(driver, 10).until(lambda d: "Copy it now" in d.page_source)
        shoot(driver, "api-keys")
        driver.get(url + f"/admin/alerts/{alert_id}/send?audience=all")
        check("everyone: 12 devices" in driver.page_source, "the send-to-everyone confirmation does not state 12 devices")
    finally:
        driver.quit()
        sidecar.stop()
        gorush.shutdown()
    print(f"console: signed in with Chromium; created, translated, published (feed decoded: en + es), sent to 5 test devices "
          f"with live progress to done; a viewer could not publish; a form without CSRF token was refused; logout ended the session; "
          f"{len(os.listdir(SHOTS))} screenshots in {SHOTS}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


if __name__ == "__main__":
    main()
