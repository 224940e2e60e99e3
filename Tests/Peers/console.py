#!/usr/bin/env python3
"""The admin console in a real browser: headless Chromium driven by Selenium
against the real binary, with gorush and OneBusAway stand-ins.

    console.py BIN [SCREENSHOT_DIR]

What an agency's staff do, checked for what riders then get:
- times: forms pre-filled, labelled and read in the region's zone
  (America/Los_Angeles and Asia/Kolkata), the feed starting an alert made
  "now" now; the effective end shown; zones checked against the tz database
  (the nearest name offered); dates outside 2000-2100 refused; a region
  without a zone or agency id shows a setup checklist an admin completes;
- one push per decision: a double click on send starts one send, a
  refresh after every action repeats nothing, a replayed confirmation
  sends nothing, a second send to everyone needs a deliberate tick, a
  draft goes to the test devices named on the confirmation, a failed send
  says why and resumes only what was not delivered, the page notices when
  it loses the server;
- translations: every language of the catalog chosen by name reaches the
  feed under its tag, a description is required when the English has one,
  edited in place, deleted, a warning when no device reads the language;
- keys shown once, regions required, revocation and unpublishing
  confirmed; withdrawn distinct from draft; stacked cards on a phone; a
  form typed before the session ended survives signing in; the console's
  not-found page; the focus ring's contrast; a survey without questions
  cannot be available; the ghost-bus filter by route short name and the CSV
  export's ISO 8601 times and numeric coordinates;
- forms put each problem on its field in the form's words (alerts, surveys,
  sources), and a refused survey is corrected with the keyboard alone;
  CSV columns and question types by name; the region picker counts devices;
- roles, CSRF and logout.
Every page is screenshotted (desktop, some on a phone) into SCREENSHOT_DIR,
a folder the run creates and empties of old pictures: script/peer-checks
uses a scratch one deleted with the run unless SIDECAR_SCREENSHOTS names a
folder to keep. No tracked file is written; the pictures in docs/admin are
copied from a kept run.
"""
import csv
import datetime
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from zoneinfo import ZoneInfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402
from google.transit import gtfs_realtime_pb2  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
SHOTS = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(base.WORK, "shots")
os.makedirs(SHOTS, exist_ok=True)
for stale in os.listdir(SHOTS):  # the folder holds this run's pictures only
    if stale.endswith(".png"):
        os.remove(os.path.join(SHOTS, stale))
check = base.check
PASSWORD = "correct horse battery staple"
PACIFIC = ZoneInfo("America/Los_Angeles")
KOLKATA = ZoneInfo("Asia/Kolkata")


def cli(database, *arguments, password=None, ok=True):
    done = subprocess.run([BIN, *arguments, "--database", database], capture_output=True, text=True,
                          input=(password + "\n") if password else None)
    if ok:
        check(done.returncode == 0, f"sidecar {' '.join(arguments)}: {done.stderr}")
    return done


class FlakyGorush(base.Gorush):
    """gorush that can be told to fail every request (HTTP 500)."""

    def __init__(self):
        self.failing = False
        # Cleared: pushes wait until it is set (so a page sees a send running).
        self.flowing = threading.Event()
        self.flowing.set()
        super().__init__()
        self.RequestHandlerClass = FlakyGorushHandler


class FlakyGorushHandler(base.GorushHandler):
    def do_POST(self):
        self.server.flowing.wait(120)
        if self.server.failing:
            self.rfile.read(int(self.headers["Content-Length"]))
            answer = b'{"error":"gorush is down for maintenance"}'
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        super().do_POST()


def browser():
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                     "--force-device-scale-factor=1", "--lang=en-US"]:
        options.add_argument(argument)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.implicitly_wait(2)
    return driver


def shoot(driver, name, phone=False):
    """A full-page screenshot (the window grown to the page's height)."""
    width = 390 if phone else 1280
    driver.set_window_size(width, 900)
    height = driver.execute_script("return Math.ceil(document.body.getBoundingClientRect().height)")
    driver.set_window_size(width, min(max(height + 40, 600), 6000))
    driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
    driver.set_window_size(1280, 900)


def wait_text(driver, text, seconds=10):
    try:
        WebDriverWait(driver, seconds).until(lambda d: text in d.page_source)
    except Exception:
        base.fail(f"waited {seconds} s for “{text}” on {driver.current_url}:\n{visible(driver)[:1500]}")


def visible(driver):
    return driver.find_element(By.TAG_NAME, "body").text


def refresh(driver):
    """A refresh, as staff do after every action: it must repeat nothing."""
    driver.refresh()
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.readyState") == "complete")


def submit(driver, form_css="main form"):
    driver.find_element(By.CSS_SELECTOR, f"{form_css} button[type=submit]").click()


def set_value(driver, name, value, form=None):
    element = (form or driver).find_element(By.NAME, name)
    driver.execute_script("arguments[0].value = arguments[1]", element, value)


def local_minutes(zone):
    """The region's wall-clock time now and a minute ago, as a form shows it."""
    now = datetime.datetime.now(zone)
    return {(now - datetime.timedelta(minutes=back)).strftime("%Y-%m-%dT%H:%M") for back in (0, 1)}


def sign_in(driver, url, email, path="/admin"):
    driver.get(url + path)
    check("/admin/login" in driver.current_url, f"not sent to sign in: {driver.current_url}")
    driver.find_element(By.NAME, "email").send_keys(email)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    WebDriverWait(driver, 60).until(lambda d: "/admin/login" not in d.current_url)


def feed(url, region=1):
    with urllib.request.urlopen(url + f"/api/v1/regions/{region}/alerts", timeout=60) as response:
        message = gtfs_realtime_pb2.FeedMessage()
        message.ParseFromString(response.read())
        return message


def entity(url, alert_id, region=1):
    found = [e for e in feed(url, region).entity if e.id == f"Alert_{alert_id}"]
    return found[0].alert if found else None


def session_cookie(driver):
    return {c["name"]: c["value"] for c in driver.get_cookies()}.get("sidecar_session")


def fetch(url, cookie, method="GET", fields=None):
    data = urllib.parse.urlencode(fields).encode() if fields is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Cookie": f"sidecar_session={cookie}",
                                                                           "Content-Type": "application/x-www-form-urlencoded"})
    opener = urllib.request.build_opener(NoRedirect())
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def sends_of(database, alert_id):
    return [line for line in cli(database, "alert", "show", str(alert_id)).stdout.splitlines() if line.strip().startswith("send ")]


def wait_for_send(database, alert_id, count, status, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        sends = sends_of(database, alert_id)
        if len(sends) == count and f": {status}," in sends[0 if count == 1 else -1]:
            return sends
        time.sleep(0.5)
    base.fail(f"alert {alert_id}: no {count} sends ending {status} within {seconds} s: {sends_of(database, alert_id)}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def regions_file(oba):
    path = os.path.join(base.WORK, "console-regions.json")
    with open(path, "w") as file:
        json.dump({"data": {"list": [
            {"id": 1, "regionName": "Puget Sound", "obaBaseUrl": oba.url, "sidecarBaseUrl": None,
             "bounds": [{"lat": 47.6, "lon": -122.3, "latSpan": 0.7, "lonSpan": 0.7}]},
            {"id": 2, "regionName": "Bengaluru", "obaBaseUrl": oba.url, "sidecarBaseUrl": None,
             "bounds": [{"lat": 12.97, "lon": 77.59, "latSpan": 0.5, "lonSpan": 0.5}]}]}}, file)
    return path


def register(sidecar, region, fields):
    status, _ = sidecar.request("POST", f"/api/v2/regions/{region}/push_registrations", urllib.parse.urlencode(fields),
                                {"Content-Type": "application/x-www-form-urlencoded"})
    check(status == 204, f"registration {fields}: {status}")


# MARK: The checks, in the order staff meet them

def setup_checklist(driver, url):
    """Region 2 has no zone or agency id: the dashboard says so; the admin sets both."""
    driver.get(url + "/admin/regions/2")
    check("This region is not set up yet" in driver.page_source, "no setup checklist for a region without zone or agency")
    shoot(driver, "setup-checklist")
    driver.find_element(By.LINK_TEXT, "Set up this region").click()
    for zone, expected in [("Mars/Olympus", "is not a zone of the tz database"),
                           ("Asia/Kolkatta", "the nearest name in the tz database is Asia/Kolkata")]:
        set_value(driver, "agency_id", "1")
        set_value(driver, "timezone", zone)
        submit(driver)
        wait_text(driver, expected)
    shoot(driver, "region-settings-refused")
    set_value(driver, "timezone", "Asia/Kolkata")
    submit(driver)
    wait_text(driver, "Region settings saved.")
    refresh(driver)
    check("This region is not set up yet" not in driver.page_source, "the checklist stayed after the setup")
    check("Asia/Kolkata" in driver.page_source and "+05:30" in driver.page_source, "the dashboard does not name the zone and offset")
    print("console: a region without zone or agency showed its checklist; Mars/Olympus refused, Asia/Kolkatta refused naming Asia/Kolkata; set")


def create_alert_now(driver, url, database):
    """An alert made "now" in a Pacific region starts now in the feed, not 8 hours later."""
    driver.get(url + "/admin/regions/1/alerts/new")
    check("America/Los_Angeles" in driver.page_source, "the form does not name the region's zone")
    now_shown = {value.replace("T", " ") for value in local_minutes(PACIFIC)}
    check(any(f"it is now {shown} there" in driver.page_source for shown in now_shown), "the form does not show the region's current time")
    prefilled = driver.find_element(By.NAME, "start").get_attribute("value")
    check(prefilled in local_minutes(PACIFIC), f"start pre-filled {prefilled}, not Pacific now {local_minutes(PACIFIC)}")
    check("8 hours" in driver.page_source, "the end field does not say the 8-hour rule")
    driver.find_element(By.NAME, "header").send_keys("Route 44 detoured at 45th St")
    driver.find_element(By.NAME, "description").send_keys("Buses skip 45th St until Friday; board at 46th St.")
    Select(driver.find_element(By.NAME, "cause")).select_by_value("CONSTRUCTION")
    Select(driver.find_element(By.NAME, "effect")).select_by_value("DETOUR")
    shoot(driver, "alert-new")
    submit(driver)
    WebDriverWait(driver, 60).until(lambda d: re.search(r"/admin/alerts/\d+", d.current_url))
    alert_id = re.search(r"/admin/alerts/(\d+)", driver.current_url).group(1)
    wait_text(driver, "Alert created as a draft.")
    refresh(driver)
    listed = cli(database, "alert", "list", "--region", "1").stdout.strip().splitlines()
    check(len(listed) == 1, f"a refresh after creating made another alert: {listed}")
    check("(no end set: 8 hours from the start)" in driver.page_source, "the alert page does not show the effective end")
    return alert_id


def scoped_alert(driver, url, database):
    """Where: an id OneBusAway does not know is put back on the field; known ones are
    saved, completed with the agency, and the page says what the alert is about."""
    driver.get(url + "/admin/regions/1/alerts/new")
    driver.find_element(By.NAME, "header").send_keys("Stop 75403 closed for repairs")
    driver.find_element(By.NAME, "scope").send_keys("stop=75403\nroute=1_missing44")
    submit(driver)
    wait_text(driver, "does not know route 1_missing44")
    field_error = driver.find_element(By.CSS_SELECTOR, "textarea[name=scope]").find_element(By.XPATH, "..").text
    check("does not know route 1_missing44" in field_error, f"the refusal is not on the Where field: {field_error[:300]}")
    shoot(driver, "alert-scope-refused")
    scope = driver.find_element(By.NAME, "scope")
    scope.clear()
    scope.send_keys("route=1_1 stop=75403")
    submit(driver)
    WebDriverWait(driver, 60).until(lambda d: re.search(r"/admin/alerts/\d+", d.current_url))
    alert_id = re.search(r"/admin/alerts/(\d+)", driver.current_url).group(1)
    wait_text(driver, "Alert created as a draft.")
    check("About: stop 1_75403 on route 1_1." in visible(driver), "the page does not say what the alert is about")
    check("route=1_1 stop=1_75403" in cli(database, "alert", "show", alert_id).stdout, "alert show does not print the scope")
    shoot(driver, "alert-scoped")
    # Checks before publishing: no cause or effect given, said with one button to acknowledge them.
    check("Before publishing" in visible(driver) and "No cause is given" in visible(driver), "the page does not list the checks")
    driver.find_element(By.XPATH, "//button[normalize-space()='Acknowledge these warnings']").click()
    wait_text(driver, "Warnings acknowledged")
    check("Acknowledged: No cause is given" in visible(driver), "an acknowledged warning is not marked so")
    check(not driver.find_elements(By.XPATH, "//button[normalize-space()='Acknowledge these warnings']"), "nothing is left to acknowledge")
    shoot(driver, "alert-checks-acknowledged")
    # A send scheduled two hours ahead, in the region's zone, listed, then cancelled once.
    later = (datetime.datetime.now(PACIFIC) + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    form = driver.find_element(By.CSS_SELECTOR, "#schedules form")
    set_value(driver, "at_time", later, form=form)
    Select(form.find_element(By.NAME, "audience")).select_by_value("test")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_text(driver, "Send scheduled")
    rows = driver.find_element(By.CSS_SELECTOR, "#schedules table").text
    check(later.replace("T", " ") in rows and "test devices" in rows and "scheduled" in rows, f"the schedule is not listed: {rows}")
    check(f"alert {alert_id}\ttest\t" in cli(database, "schedule", "list", "--region", "1").stdout, "schedule list does not show it")
    shoot(driver, "alert-scheduled")
    driver.find_element(By.XPATH, "//section[@id='schedules']//button[normalize-space()='Cancel']").click()
    wait_text(driver, "Scheduled send cancelled")
    check("cancelled" in driver.find_element(By.CSS_SELECTOR, "#schedules table").text, "the cancelled schedule is not shown so")
    # Two people: with the region asking for it, Publish waits for a second
    # person (the operator at the CLI), and the one who asked sees no Approve.
    cli(database, "region", "set", "--id", "1", "--require-approval", "true", "--agency-check", "false")
    driver.get(url + f"/admin/alerts/{alert_id}")
    driver.find_element(By.XPATH, "//button[normalize-space()='Publish']").click()
    wait_text(driver, "asks a second person to approve")
    approvals = driver.find_element(By.CSS_SELECTOR, "#approvals table").text
    check("publishing" in approvals and "pending" in approvals, f"the request is not listed: {approvals}")
    check(not driver.find_elements(By.XPATH, "//section[@id='approvals']//button[normalize-space()='Approve']"), "the one who asked may approve")
    check(cli(database, "alert", "show", alert_id).stdout.count("state:       draft") == 1, "published without the second person")
    shoot(driver, "alert-approval-pending")
    request = re.search(r"^(\d+)\talert " + alert_id + r"\tpublish\tpending", cli(database, "approval", "list", "--region", "1").stdout, re.M)
    check(request is not None, "approval list does not show the request")
    cli(database, "approval", "approve", request.group(1))
    refresh(driver)
    check("approved by cli:" in driver.find_element(By.CSS_SELECTOR, "#approvals table").text, "the approval is not shown")
    cli(database, "region", "set", "--id", "1", "--require-approval", "false", "--agency-check", "false")
    cli(database, "alert", "unpublish", alert_id)
    cli(database, "alert", "delete", alert_id)
    print("console: a scope's unknown id is refused on its field; a known one is saved, completed with the agency, and shown; "
          "warnings before publishing are listed and acknowledged; a send scheduled in the region's zone is listed and cancelled; "
          "with two people required, Publish waited for the operator's approval")


def edit_conflict(driver, url, database):
    """Two editors: the save that meets the other's change lists it and merges it in."""
    created = cli(database, "alert", "create", "--region", "1", "--header", "Elevator out at Westlake",
                  "--start", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")).stdout
    alert_id = created.split()[2]
    driver.get(url + f"/admin/alerts/{alert_id}")
    form = f"form[action='/admin/alerts/{alert_id}']"
    # Meanwhile someone else changes the header.
    cli(database, "alert", "edit", alert_id, "--header", "Elevator out at Westlake, use Pine St")
    field = driver.find_element(By.CSS_SELECTOR, f"{form} [name='description']")
    field.clear()
    field.send_keys("Use the elevator at Pine St")
    submit(driver, form)
    wait_text(driver, "changed by someone else", seconds=60)
    check("their change is kept below" in visible(driver), "the page does not say their change was kept")
    header = driver.find_element(By.CSS_SELECTOR, f"{form} [name='header']").get_attribute("value")
    check(header == "Elevator out at Westlake, use Pine St", f"their header is not in the form: {header!r}")
    check(driver.find_element(By.CSS_SELECTOR, f"{form} [name='description']").get_attribute("value") == "Use the elevator at Pine St",
          "the editor's description was lost")
    shoot(driver, "edit-conflict")
    submit(driver, form)
    wait_text(driver, "Changes saved", seconds=60)
    shown = cli(database, "alert", "show", alert_id).stdout
    check("use Pine St" in shown and "Use the elevator at Pine St" in shown, f"both changes did not stand:\n{shown}")
    print("console: an edit that met someone else's change listed it field by field, kept it, and saving again kept both")


def bounds(driver, url):
    for value, year in [("1999-06-01T08:00", "1999"), ("2101-06-01T08:00", "2101")]:
        driver.get(url + "/admin/regions/1/alerts/new")
        driver.find_element(By.NAME, "header").send_keys(f"Out of range {year}")
        set_value(driver, "start", value)
        submit(driver)
        wait_text(driver, "must be between the years 2000 and 2100")
        # The error is on the field, tied to it, and the field has the focus.
        field = driver.find_element(By.NAME, "start")
        check(field.get_attribute("aria-invalid") == "true", "the refused field is not marked invalid")
        check("field-start-error" in (field.get_attribute("aria-describedby") or ""), "the error is not tied to the field")
        check(driver.switch_to.active_element == field, "the focus is not on the field in error")
    print("console: dates in 1999 and 2101 refused with a plain message, on the field, which has the focus")


def translations(driver, url, alert_id):
    """Every catalog language, chosen by name, reaches the feed under its tag."""
    driver.get(url + f"/admin/alerts/{alert_id}")
    form_css = "form#translation-form"
    form = driver.find_element(By.CSS_SELECTOR, form_css)
    for field in ["translation-language", "translation-header", "translation-description"]:
        check(form.find_elements(By.CSS_SELECTOR, f"label[for='{field}']") and form.find_elements(By.ID, field),
              f"the label for {field} does not point at its field")
    ids = driver.execute_script("return Array.from(document.querySelectorAll('[id]')).map(e => e.id)")
    check(len(ids) == len(set(ids)), f"duplicate ids: {sorted(i for i in ids if ids.count(i) > 1)}")
    options = [o.get_attribute("value") for o in Select(form.find_element(By.NAME, "language")).options if o.get_attribute("value")]
    check("es" in options and "zh-Hant" in options and "tl" in options, f"the catalog offered: {options}")
    check(any("Spanish (es)" in o.text for o in Select(form.find_element(By.NAME, "language")).options), "languages are not offered by name")

    # The English has a description: a translation without one is refused.
    Select(form.find_element(By.NAME, "language")).select_by_value("es")
    form.find_element(By.NAME, "header").send_keys("Ruta 44 desviada")
    driver.execute_script("arguments[0].removeAttribute('required')", form.find_element(By.NAME, "description"))
    submit(driver, form_css)
    wait_text(driver, "Description can't be blank")

    for tag in options:
        driver.get(url + f"/admin/alerts/{alert_id}")
        form = driver.find_element(By.CSS_SELECTOR, form_css)
        Select(form.find_element(By.NAME, "language")).select_by_value(tag)
        form.find_element(By.NAME, "header").send_keys(f"Header in {tag}")
        form.find_element(By.NAME, "description").send_keys(f"Description in {tag}")
        submit(driver, form_css)
        wait_text(driver, "Translation saved")
        refresh(driver)
    check("no registered device reads this language yet" in driver.page_source, "no warning for a language no device reads")

    # Edit in place: one Spanish translation, changed.
    driver.find_element(By.CSS_SELECTOR, "a[href*='translation=es#']").click()
    form = driver.find_element(By.CSS_SELECTOR, form_css)
    header = form.find_element(By.NAME, "header")
    check(header.get_attribute("value") == "Header in es", "editing does not fill in the translation")
    header.clear()
    header.send_keys("Ruta 44 desviada en la calle 45")
    description = form.find_element(By.NAME, "description")
    description.clear()
    description.send_keys("Los autobuses no paran en la calle 45 hasta el viernes.")
    submit(driver, form_css)
    wait_text(driver, "Translation saved")
    refresh(driver)
    check(driver.page_source.count("Spanish (es)") >= 1 and "Header in es" not in driver.page_source, "the Spanish translation was not replaced")

    # Delete one: it asks first, naming what French devices get instead.
    driver.find_element(By.XPATH, "//a[contains(@href, 'translations/delete?language=fr')]").click()
    wait_text(driver, "Delete the French translation?")
    check("get the English" in visible(driver), "the confirmation does not say what French devices get")
    driver.find_element(By.XPATH, "//button[normalize-space()='Delete the translation']").click()
    wait_text(driver, "Translation deleted.")
    refresh(driver)
    check("Header in fr" not in driver.page_source, "the French translation is still there")
    shoot(driver, "alert-translations")
    return [tag for tag in options if tag != "fr"]


def publish(driver, url, alert_id, database, languages):
    driver.get(url + f"/admin/alerts/{alert_id}")
    driver.find_element(By.XPATH, "//button[normalize-space()='Publish']").click()
    wait_text(driver, "Published: the alert is in the feed.")
    refresh(driver)
    alert = entity(url, alert_id)
    check(alert is not None, f"alert {alert_id} not in the feed")
    start = alert.active_period[0].start
    check(abs(start - time.time()) < 180, f"the alert made now starts {start - time.time():+.0f} s from now in the feed")
    check(alert.active_period[0].end - start == 8 * 3600, "no end: the feed's 8 hours")
    tags = [t.language for t in alert.header_text.translation]
    for tag in languages:
        check(tag in tags, f"{tag} missing from the feed's header: {tags}")
    check("fr" not in tags, "a deleted translation is still in the feed")
    bodies = {t.language: t.text for t in alert.description_text.translation}
    check(bodies.get("es") == "Los autobuses no paran en la calle 45 hasta el viernes.", f"the Spanish body is {bodies.get('es')!r}")
    header = {t.language: t.text for t in alert.header_text.translation}
    check(header["es"] == "Ruta 44 desviada en la calle 45", f"feed header es {header['es']}")
    publishes = cli(database, "alert", "show", alert_id).stdout
    check("state:       live" in publishes, f"the CLI does not see it live:\n{publishes}")
    print(f"console: created at Pacific now, the feed starts it {start - time.time():+.0f} s from now; {len(languages)} catalog "
          f"languages chosen by name reached the feed under their tags (es edited in place, fr deleted)")


def send_draft_to_test_devices(driver, url, database, gorush):
    """A draft goes to the test devices named on the confirmation; a double click sends once."""
    driver.get(url + "/admin/regions/1/alerts/new")
    driver.find_element(By.NAME, "header").send_keys("Elevator out at Westlake")
    submit(driver)
    wait_text(driver, "Alert created as a draft.")
    draft = re.search(r"/admin/alerts/(\d+)", driver.current_url).group(1)
    driver.find_element(By.PARTIAL_LINK_TEXT, "Send to test devices").click()
    for number in range(5):
        check(f"Test phone {number}" in driver.page_source, f"the confirmation does not name Test phone {number}")
    check("is a draft" in driver.page_source, "the confirmation does not say it is a draft")
    shoot(driver, "send-confirm-test")
    token = driver.find_element(By.NAME, "send_token").get_attribute("value")
    csrf = driver.find_element(By.CSS_SELECTOR, "main form input[name=csrf]").get_attribute("value")
    gorush.reset()
    ActionChains(driver).double_click(driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]")).perform()
    WebDriverWait(driver, 60).until(lambda d: re.search(rf"/admin/alerts/{draft}\?", d.current_url))
    wait_for_send(database, draft, 1, "done")
    refresh(driver)
    status, headers, _ = fetch(url + f"/admin/alerts/{draft}/sends", session_cookie(driver), "POST",
                               {"csrf": csrf, "audience": "test", "send_token": token})
    check(status == 303 and "send-repeated" in headers.get("Location", ""), f"a replayed confirmation answered {status} {headers}")
    time.sleep(1)
    check(len(sends_of(database, draft)) == 1, f"more than one send: {sends_of(database, draft)}")
    check(gorush.pushes == {f"device-{n}": 1 for n in range(5)}, f"the test devices got {gorush.pushes}")
    print("console: a draft went to the 5 test devices named on the confirmation; a double click, a refresh and a replayed "
          "confirmation sent it once")


def confirmations_say_what_riders_get(driver, url, database, gorush):
    """A stale translation and an ended alert, as the send confirmation tells them."""
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    # A translation made from an earlier English text: the Spanish test devices get English.
    created = cli(database, "alert", "create", "--region", "1", "--header", "Station closed", "--start", stamp(now)).stdout
    stale = created.split()[2]
    cli(database, "alert", "translate", stale, "--language", "es", "--header", "Estación cerrada")
    cli(database, "alert", "edit", stale, "--header", "Station closed until noon")
    driver.get(url + f"/admin/alerts/{stale}/send?audience=test")
    check("2 devices would get the English" in visible(driver), f"the stale translation is not flagged:\n{visible(driver)[:1200]}")
    check(driver.find_elements(By.PARTIAL_LINK_TEXT, "Update translation"), "no way to update the translation")
    button = driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").text
    check(button == "Send anyway to 5 test devices (2 get English)", f"the button reads {button!r}")
    shoot(driver, "send-confirm-stale")
    # An alert that has ended goes out only with a reason. It was published
    # while it ran (publishing one already over is refused), then ended.
    created = cli(database, "alert", "create", "--region", "1", "--header", "Bridge closed this morning",
                  "--start", stamp(now - datetime.timedelta(hours=3)), "--end", stamp(now + datetime.timedelta(minutes=5))).stdout
    ended = created.split()[2]
    cli(database, "alert", "publish", ended)
    cli(database, "alert", "edit", ended, "--end", stamp(now - datetime.timedelta(minutes=5)))
    refused = cli(database, "alert", "create", "--region", "1", "--header", "Ferry cancelled yesterday",
                  "--start", stamp(now - datetime.timedelta(hours=30)), "--end", stamp(now - datetime.timedelta(hours=26))).stdout.split()[2]
    late = subprocess.run([BIN, "alert", "publish", refused, "--database", database], capture_output=True, text=True)
    check(late.returncode != 0 and "Not published: Its shown period ended" in late.stderr, f"an ended alert was published: {late.stderr}")
    cli(database, "alert", "delete", refused)
    driver.get(url + f"/admin/alerts/{ended}/send?audience=test")
    check("This alert ended" in visible(driver), "the confirmation does not say the alert ended")
    reason = driver.find_element(By.NAME, "ended_reason")
    check(reason.get_attribute("required") is not None, "the reason is not required")
    submit(driver)
    check(not sends_of(database, ended), "an ended alert was pushed without a reason")
    reason.send_keys("The bridge reopened late: tell riders why")
    gorush.reset()
    submit(driver)
    wait_text(driver, "Sending started", seconds=60)
    wait_for_send(database, ended, 1, "done")
    driver.get(url + "/admin/audit?what=alert.send")
    check("pushed after it ended: The bridge reopened late" in visible(driver), "the reason is not in the audit log")
    print("console: the send confirmation flagged 2 Spanish devices getting English from a stale translation (\"Send anyway\", "
          "\"Update translation\"); an ended alert went out only with a reason, kept in the audit log")


def send_to_everyone_twice(driver, url, alert_id, database, gorush):
    gorush.reset()
    driver.get(url + f"/admin/alerts/{alert_id}/send?audience=all")
    check("everyone: 12 devices" in driver.page_source, "the confirmation does not state 12 devices")
    check("Never sent." in driver.page_source, "the first confirmation does not say it was never sent")
    submit(driver)
    wait_text(driver, "Sending started")
    WebDriverWait(driver, 60).until(expected_conditions.text_to_be_present_in_element(
        (By.CSS_SELECTOR, "[data-send-id] [data-field='status']"), "done"))
    WebDriverWait(driver, 60).until(expected_conditions.text_to_be_present_in_element(
        (By.CSS_SELECTOR, "[data-send-id] [data-field='summary']"), "12 of 12 delivered"))
    shoot(driver, "send-progress")
    refresh(driver)
    driver.get(url + f"/admin/alerts/{alert_id}/send?audience=all")
    check("Everyone already got this alert" in driver.page_source, "a second send to everyone is not flagged")
    check("everyone" in visible(driver).split("Sent before")[1], "the earlier send is not listed")
    shoot(driver, "send-confirm-again")
    submit(driver)
    wait_text(driver, "Not sent")
    check(len(sends_of(database, alert_id)) == 1, "a second send started without the deliberate tick")
    driver.get(url + f"/admin/alerts/{alert_id}/send?audience=all")
    driver.find_element(By.CSS_SELECTOR, "input[name=again]").click()
    submit(driver)
    wait_for_send(database, alert_id, 2, "done")
    check(all(count == 2 for count in gorush.pushes.values()) and len(gorush.pushes) == 12, f"pushes {gorush.pushes}")
    print("console: everyone got it (12 of 12, live progress); a second send to everyone needed the tick, then sent once more")


def kolkata(driver, url, database):
    driver.get(url + "/admin/regions/2/alerts/new")
    check("Asia/Kolkata" in driver.page_source and "+05:30" in driver.page_source, "the Kolkata form does not name its zone")
    prefilled = driver.find_element(By.NAME, "start").get_attribute("value")
    check(prefilled in local_minutes(KOLKATA), f"start pre-filled {prefilled}, not Kolkata now {local_minutes(KOLKATA)}")
    driver.find_element(By.NAME, "header").send_keys("Purple Line closed at MG Road next week")
    # A day a week ahead (the feed carries only alerts not yet over).
    day = (datetime.datetime.now(KOLKATA) + datetime.timedelta(days=7)).date()
    set_value(driver, "start", f"{day.isoformat()}T09:30")
    set_value(driver, "end", f"{day.isoformat()}T18:00")
    shoot(driver, "alert-new-kolkata")
    submit(driver)
    wait_text(driver, "Alert created as a draft.")
    alert_id = re.search(r"/admin/alerts/(\d+)", driver.current_url).group(1)
    check(f"{day.isoformat()} 09:30" in driver.page_source, "the alert page does not show the typed time")
    shown = cli(database, "alert", "show", alert_id).stdout
    check(f"start:       {day.isoformat()}T09:30:00+05:30" in shown, f"the CLI shows another start:\n{shown}")
    driver.find_element(By.XPATH, "//button[normalize-space()='Publish']").click()
    wait_text(driver, "Published")
    alert = entity(url, alert_id, region=2)
    expected = int(datetime.datetime(day.year, day.month, day.day, 4, 0, tzinfo=datetime.timezone.utc).timestamp())
    check(alert.active_period[0].start == expected, f"Kolkata 09:30 reached the feed as {alert.active_period[0].start}, not {expected}")
    print("console: Asia/Kolkata: pre-filled with Kolkata now, 09:30 typed is 04:00 UTC in the feed")
    return alert_id


def failing_send(driver, url, database, gorush, sidecar, restart):
    """gorush fails: the page notices the server going away, the send says why and resumes."""
    created = cli(database, "alert", "create", "--region", "1", "--header", "Escalator out at University St",
                  "--start", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")).stdout
    alert_id = created.split()[2]
    cli(database, "alert", "publish", alert_id)
    gorush.failing = True
    driver.get(url + f"/admin/alerts/{alert_id}/send?audience=all")
    submit(driver)
    wait_text(driver, "Sending started")
    WebDriverWait(driver, 60).until(expected_conditions.text_to_be_present_in_element(
        (By.CSS_SELECTOR, "[data-send-id] [data-field='status']"), "running"))
    sidecar.stop(signal.SIGKILL)
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "[data-lost]").is_displayed())
    shoot(driver, "send-lost-server")
    print("console: the send page said it lost contact when the server went away")
    return alert_id, restart()


def resume_failed_send(driver, url, database, gorush, alert_id):
    wait_for_send(database, alert_id, 1, "failed", seconds=120)
    driver.get(url + f"/admin/alerts/{alert_id}")
    check("It stopped:" in driver.page_source and "500" in driver.page_source, "the failure does not say why")
    check("Resume: 12 not yet delivered" in driver.page_source, f"no resume offer:\n{visible(driver)[-800:]}")
    check("0 of 12 delivered" in visible(driver), "the progress does not count against the audience")
    shoot(driver, "send-failed")
    gorush.failing = False
    gorush.reset()
    driver.find_element(By.PARTIAL_LINK_TEXT, "Resume: 12 not yet delivered").click()
    check("This resumes send" in driver.page_source and "Everyone already got" not in driver.page_source, "the resume says something else")
    gorush.flowing.clear()  # the page opens on a running send
    submit(driver)
    wait_text(driver, "A send is running", seconds=60)
    page = driver.current_url
    gorush.flowing.set()
    # Without a reload: the page says the send finished and the send buttons work again.
    WebDriverWait(driver, 120).until(lambda d: "finished: 12 of 12 delivered" in d.find_element(By.CSS_SELECTOR, "[data-send-outcome]").text)
    check(driver.current_url == page, "the page was reloaded")
    check(driver.find_element(By.CSS_SELECTOR, "[data-send-outcome]").get_attribute("aria-live") == "polite", "the outcome is not announced")
    check(not driver.find_elements(By.CSS_SELECTOR, "button[data-enable-href]") and driver.find_elements(By.PARTIAL_LINK_TEXT, "Send to test devices"),
          "the send buttons were not enabled again")
    wait_for_send(database, alert_id, 1, "done")
    driver.get(url + f"/admin/alerts/{alert_id}")
    check("12 of 12 delivered" in visible(driver), "the resumed send did not deliver all 12")
    check(len(gorush.pushes) == 12 and all(count == 1 for count in gorush.pushes.values()), f"pushes {gorush.pushes}")
    print("console: gorush failing: the send stopped saying why (HTTP 500), offered “Resume: 12 not yet delivered”, resumed to 12 of 12; "
          "the open page said it finished and enabled its send buttons again without a reload")


def api_keys(driver, url, database):
    driver.get(url + "/admin/keys")
    driver.find_element(By.NAME, "name").send_keys("CAD integration")
    submit(driver, "form[action='/admin/keys']")
    wait_text(driver, "Choose the regions this key may act on")
    check("Created API key" not in driver.page_source, "a key without regions was created")
    driver.find_element(By.ID, "field-region_1").click()
    ActionChains(driver).double_click(driver.find_element(By.CSS_SELECTOR, "form[action='/admin/keys'] button[type=submit]")).perform()
    wait_text(driver, "Copy it now")
    key = re.search(r"(?:obask_[0-9]+_|sidecar_)[A-Za-z0-9_-]+", visible(driver))
    check(key is not None, "the key is not shown")
    shoot(driver, "api-keys")
    refresh(driver)
    check(key.group(0) not in driver.page_source, "the key is shown again after a refresh")
    listed = cli(database, "apikey", "list").stdout.strip().splitlines()
    check(len(listed) == 1, f"a double click or refresh made {len(listed)} keys: {listed}")
    driver.find_element(By.LINK_TEXT, "Revoke…").click()
    check("Revoke API key" in driver.page_source, "no revocation confirmation")
    submit(driver)
    wait_text(driver, "API key revoked")
    refresh(driver)
    check("revoked" in cli(database, "apikey", "list").stdout, "the key was not revoked")
    print("console: a key needs regions; shown once (not after a refresh); a double click made one; revoked after a confirmation")


def unpublish(driver, url, alert_id):
    driver.get(url + f"/admin/alerts/{alert_id}")
    driver.find_element(By.LINK_TEXT, "Unpublish…").click()
    check("leaves the feed at once" in driver.page_source, "no unpublish confirmation")
    submit(driver)
    wait_text(driver, "Withdrawn")
    refresh(driver)
    check(entity(url, alert_id) is None, "the withdrawn alert is still in the feed")
    driver.get(url + "/admin/regions/1/alerts")
    page = visible(driver)
    check("Withdrawn: unpublished after being published" in page and "Drafts: never published" in page, "withdrawn is not told from drafts")
    shoot(driver, "alerts")
    driver.set_window_size(390, 900)
    display = driver.execute_script("const cell = document.querySelector('table.stack td'); return cell && getComputedStyle(cell).display")
    check(display == "block", f"alert rows are not stacked cards on a phone (td display {display})")
    shoot(driver, "alerts-phone", phone=True)
    print("console: unpublishing confirmed; the alert is listed as withdrawn, not as a draft; lists are stacked cards on a phone")


def surveys(driver, url):
    driver.get(url + "/admin/regions/1/surveys/new")
    check("America/Los_Angeles" in driver.page_source, "the survey's dates do not name the zone")
    driver.find_element(By.NAME, "name").send_keys("How was your trip?")
    driver.find_element(By.NAME, "new_study").send_keys("Winter 2026 rider survey")
    submit(driver)
    wait_text(driver, "A survey with no questions cannot be available: add a question, or untick Available.")
    shoot(driver, "survey-new")
    driver.find_element(By.NAME, "q0_label").send_keys("How was your trip today?")
    Select(driver.find_element(By.NAME, "q0_type")).select_by_value("radio")
    driver.find_element(By.NAME, "q0_options").send_keys("Great\nFine\nNot good")
    submit(driver)
    wait_text(driver, "Survey saved")
    refresh(driver)
    shoot(driver, "survey")
    driver.get(url + "/admin/regions/1/surveys")
    check(visible(driver).count("How was your trip?") == 1, "a refresh saved the survey twice")
    shoot(driver, "surveys")
    print("console: a survey without questions could not be made available; with one it was saved once")


def tab_to(driver, name, limit=150):
    """Presses Tab until the control named `name` has the focus, as a keyboard user would."""
    for _ in range(limit):
        if driver.switch_to.active_element.get_attribute("name") == name:
            return driver.switch_to.active_element
        ActionChains(driver).send_keys(Keys.TAB).perform()
    check(False, f"Tab never reached {name}")


def keyboard_recovery(driver, url):
    """A survey made and corrected with the keyboard alone: the refused form
    puts the focus on the field in error, scrolled into view and tied to its
    message in the form's words, and the correction is typed where the focus is."""
    driver.get(url + "/admin/regions/1/surveys/new")
    tab_to(driver, "name")
    ActionChains(driver).send_keys("Which line do you ride?").perform()
    tab_to(driver, "q0_label")
    ActionChains(driver).send_keys("Your line").perform()
    tab_to(driver, "q0_type")
    ActionChains(driver).send_keys("O").perform()  # "One choice"
    tab_to(driver, "q0_url")
    ActionChains(driver).send_keys(Keys.ENTER).perform()  # submits the form, the choices left empty
    wait_text(driver, "Question 1: a “One choice” question needs its choices, one per line.")
    WebDriverWait(driver, 10).until(lambda d: d.switch_to.active_element.get_attribute("name") == "q0_options")
    field = driver.switch_to.active_element
    check(field.get_attribute("aria-invalid") == "true", "the field in error is not marked invalid")
    check("field-q0_options-error" in (field.get_attribute("aria-describedby") or ""), "the error is not tied to the field")
    top, bottom, height = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight]", field)
    check(0 <= top and bottom <= height, f"the field in error is not scrolled into view ({top}..{bottom} of {height})")
    check("radio" not in visible(driver) and "options" not in visible(driver).split("Please correct")[1][:300],
          "the message names the document's codes")
    shoot(driver, "survey-keyboard-error")
    ActionChains(driver).send_keys("Red", Keys.ENTER, "Blue").perform()
    tab_to(driver, "q0_url")
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    wait_text(driver, "Survey saved")
    check("One choice" in visible(driver), "the saved survey does not name its question's type")
    print("console: a survey refused and corrected with the keyboard alone; the focus went to the field in error, in view, its message in the form's words")


def ghost_bus(driver, url, sidecar):
    for number in range(3):
        status, answer = sidecar.request("POST", "/api/v2/regions/1/ghost_bus_reports", urllib.parse.urlencode({
            "user_identifier": f"rider-{number}", "trip_identifier": "t1", "service_date": str(base.SERVICE_DATE), "route_identifier": "1_1",
            "wait_duration_minutes": "10", "user_latitude": "47.6097", "user_longitude": "-122.3331"}),
            {"Content-Type": "application/x-www-form-urlencoded"})
        check(status in (200, 201, 204), f"ghost-bus report: {status} {answer[:300]}")
    deadline = time.time() + 120  # only catches a hang: the loop ends once the reports show
    while time.time() < deadline:
        driver.get(url + "/admin/regions/1/ghost-bus?route=44")
        if visible(driver).count("44 · 1_1") >= 3:
            break
        time.sleep(0.5)
    check(visible(driver).count("44 · 1_1") >= 3, f"the filter by short name 44 found nothing:\n{visible(driver)[-600:]}")
    driver.get(url + "/admin/regions/1/ghost-bus?route=99")
    check("44 · 1_1" not in visible(driver), "route 99 shows route 44's reports")
    driver.get(url + "/admin/regions/1/ghost-bus")
    shoot(driver, "ghost-bus")
    # The chart scales down on a phone; its labels must stay readable.
    driver.set_window_size(390, 900)
    driver.get(url + "/admin/regions/1/ghost-bus")
    label = driver.execute_script(
        "return Math.min(...Array.from(document.querySelectorAll('.chart text')).map(t => t.getBoundingClientRect().height))")
    check(label >= 10, f"the chart's labels are {label:.1f} px tall on a phone")
    shoot(driver, "ghost-bus-phone", phone=True)
    status, headers, body = fetch(url + "/admin/regions/1/ghost-bus.csv", session_cookie(driver))
    check(status == 200 and headers.get("Content-Type", "").startswith("text/csv"), f"CSV: {status} {headers}")
    rows = list(csv.DictReader(io.StringIO(body)))
    check(len(rows) == 3, f"CSV rows: {len(rows)}")
    check(list(rows[0].keys())[:3] == ["Report", "Received (America/Los_Angeles)", "Rider (anonymous id)"],
          f"the CSV's columns are not named in words with their zone: {list(rows[0].keys())[:4]}")
    times = [value for value in rows[0].values() if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[-+]\d\d:\d\d", value or "")]
    check(times and all(t.endswith(("-08:00", "-07:00")) for t in times), f"CSV times not ISO 8601 in Pacific time: {rows[0]}")
    check(re.search(r",47\.6097,-122\.3331(,|\r?$)", body, re.M), f"coordinates are not bare numbers:\n{body[:400]}")
    print(f"console: ghost-bus reports filtered by the route's short name; chart labels {label:.0f} px tall on a phone; "
          "the CSV names its columns and has ISO 8601 Pacific times and numeric coordinates")


def session_survives(driver, url):
    driver.get(url + "/admin/regions/1/alerts/new")
    driver.find_element(By.NAME, "header").send_keys("Kept across the sign-in")
    driver.find_element(By.NAME, "description").send_keys("Every control is kept")
    # Every kind of control: selects, a checkbox, a date.
    Select(driver.find_element(By.NAME, "cause")).select_by_value("CONSTRUCTION")
    Select(driver.find_element(By.NAME, "effect")).select_by_value("DETOUR")
    Select(driver.find_element(By.NAME, "severity")).select_by_value("SEVERE")
    driver.find_element(By.NAME, "test").click()
    driver.delete_cookie("sidecar_session")
    submit(driver)
    wait_text(driver, "Your session has ended")
    check("Nothing was changed" in driver.page_source, "the signed-out page does not say nothing changed")
    driver.find_element(By.LINK_TEXT, "Sign in again").click()
    driver.find_element(By.NAME, "email").send_keys("admin@example.org")
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    WebDriverWait(driver, 60).until(lambda d: d.current_url.endswith("/admin/regions/1/alerts/new"))
    kept = driver.find_element(By.NAME, "header").get_attribute("value")
    check(kept == "Kept across the sign-in", f"the typed header was lost: {kept!r}")
    kept = {name: Select(driver.find_element(By.NAME, name)).first_selected_option.get_attribute("value") for name in ("cause", "effect", "severity")}
    check(kept == {"cause": "CONSTRUCTION", "effect": "DETOUR", "severity": "SEVERE"}, f"the selects were not restored: {kept}")
    check(driver.find_element(By.NAME, "description").get_attribute("value") == "Every control is kept", "the description was lost")
    check(driver.find_element(By.NAME, "test").is_selected(), "the checkbox was lost")
    check("Restored: what you typed before your session ended" in visible(driver), "the page does not say the form was restored")
    print("console: a form typed before the session ended was filled in again after signing in, every control (text, selects, "
          "checkbox) and a notice saying so")


def not_found_and_focus(driver, url):
    driver.get(url + "/admin/no-such-page")
    check("There is no such page" in driver.page_source and driver.find_elements(By.LINK_TEXT, "Back to the console")
          and driver.find_elements(By.CSS_SELECTOR, "link[href='/admin/static/console.css']"),
          "an unknown console path does not get the console's page")
    status, headers, _ = fetch(url + "/admin/no-such-page", session_cookie(driver))
    check(status == 404 and headers.get("Content-Type", "").startswith("text/html"), f"unknown console path: {status} {headers}")
    shoot(driver, "not-found")
    driver.get(url + "/admin/regions/1")
    # Reached with the keyboard, as :focus-visible is.
    for _ in range(3):
        ActionChains(driver).send_keys(Keys.TAB).perform()
    focused = driver.execute_script("const e = document.activeElement; const s = getComputedStyle(e); return [e.tagName, s.outlineColor, s.outlineWidth]")
    check(focused[1] == "rgb(31, 35, 40)" and focused[2] == "3px", f"the focus ring of {focused[0]} is {focused[1]} {focused[2]}")
    print("console: unknown paths get the console's not-found page (404); the focus ring is #1f2328")


def roles_csrf_logout(driver, url, alert_id, published_id):
    cookie = session_cookie(driver)
    status, _, _ = fetch(url + f"/admin/alerts/{published_id}/unpublish", cookie, "POST", {})
    check(entity(url, published_id) is not None, "a form without CSRF token unpublished the alert")
    check(status == 403, f"a POST without CSRF token answered {status}")
    driver.find_element(By.XPATH, "//button[normalize-space()='Log out']").click()
    wait_text(driver, "You are signed out")
    status, headers, _ = fetch(url + "/admin/regions/1", cookie)
    check(status == 303 and "/admin/login" in headers.get("Location", ""), f"old session: {status}")

    sign_in(driver, url, "viewer@example.org")
    driver.get(url + f"/admin/alerts/{alert_id}")
    check("Route 44 detoured" in driver.page_source, "the viewer cannot read the alert")
    check(not driver.find_elements(By.XPATH, "//button[normalize-space()='Publish'] | //a[normalize-space()='Unpublish…']"),
          "a viewer is offered publishing")
    viewer = session_cookie(driver)
    _, _, page = fetch(url + "/admin/audit", viewer)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    status, _, _ = fetch(url + f"/admin/alerts/{alert_id}/publish", viewer, "POST", {"csrf": csrf})
    check(status == 403, f"a viewer's publish answered {status}")
    shoot(driver, "alert-viewer")
    driver.find_element(By.XPATH, "//button[normalize-space()='Log out']").click()
    # Signing in again before the logout has answered would race it.
    wait_text(driver, "You are signed out")

    sign_in(driver, url, "editor@example.org")
    driver.get(url + f"/admin/alerts/{alert_id}")
    check("Send to everyone" not in driver.page_source, "an editor is offered a send to everyone")
    driver.get(url + "/admin/audit")
    check("alert.publish" in driver.page_source and "console.refused" in driver.page_source, "the audit log misses publishes or refusals")
    shoot(driver, "audit")
    print("console: a form without CSRF token and a viewer's publish refused (audited); logout ended the session")


def main():
    database = os.path.join(base.WORK, "console.sqlite3")
    oba = base.OBA()
    regions = regions_file(oba)
    cli(database, "region", "set", "--id", "1", "--agency-id", "1", "--timezone", "America/Los_Angeles", "--regions", regions)
    cli(database, "user", "create", "--email", "editor@example.org", "--role", "editor", password=PASSWORD)
    cli(database, "user", "create", "--email", "viewer@example.org", "--role", "viewer", "--region", "1", password=PASSWORD)
    cli(database, "user", "create", "--email", "admin@example.org", "--role", "admin", password=PASSWORD)
    gorush = FlakyGorush()
    arguments = ["--regions", regions, "--gorush-url", gorush.url, "--push-registration-limit", "0", "--send-lease-seconds", "5",
                 "--ghost-bus-ip-limit", "0"]
    state = {"sidecar": base.Sidecar(database, *arguments)}
    port = state["sidecar"].port
    url = f"http://127.0.0.1:{port}"

    def restart():
        state["sidecar"] = base.Sidecar(database, *arguments, "--port", str(port))
        return state["sidecar"]

    # Riders' devices: five test devices (two in Spanish) and others.
    for number in range(12):
        fields = {"token": f"device-{number}", "operating_system": "ios" if number % 3 else "android",
                  "locale": "es-US" if number % 4 == 0 else "en-US", "test_device": "true" if number < 5 else "false"}
        if number < 5:
            fields["description"] = f"Test phone {number}"
        register(state["sidecar"], 1, fields)
    register(state["sidecar"], 2, {"token": "bengaluru-1", "operating_system": "android", "locale": "hi-IN"})
    driver = browser()
    try:
        driver.get(url + "/admin/login")
        shoot(driver, "login")
        shoot(driver, "login-phone", phone=True)
        sign_in(driver, url, "admin@example.org")
        driver.get(url + "/admin/regions/1")
        check("Registered devices" in driver.page_source, "no dashboard")
        shoot(driver, "dashboard")
        shoot(driver, "dashboard-phone", phone=True)
        setup_checklist(driver, url)
        alert_id = create_alert_now(driver, url, database)
        bounds(driver, url)
        edit_conflict(driver, url, database)
        languages = translations(driver, url, alert_id)
        send_draft_to_test_devices(driver, url, database, gorush)
        confirmations_say_what_riders_get(driver, url, database, gorush)
        publish(driver, url, alert_id, database, languages)
        driver.get(url + f"/admin/alerts/{alert_id}")
        shoot(driver, "alert")
        shoot(driver, "alert-phone", phone=True)
        send_to_everyone_twice(driver, url, alert_id, database, gorush)
        kolkata(driver, url, database)
        failed, sidecar = failing_send(driver, url, database, gorush, state["sidecar"], restart)
        # While the restarted server retries the failing send: the rest.
        api_keys(driver, url, database)
        surveys(driver, url)
        keyboard_recovery(driver, url)
        ghost_bus(driver, url, sidecar)
        session_survives(driver, url)
        not_found_and_focus(driver, url)
        resume_failed_send(driver, url, database, gorush, failed)
        unpublish(driver, url, alert_id)
        scoped_alert(driver, url, database)
        # WCAG 1.4.10: on a 320 px phone the pages reflow, no page-wide scrolling.
        driver.set_window_size(320, 900)
        for path in ["/admin/audit", f"/admin/alerts/{alert_id}", "/admin/regions/1/alerts/new", "/admin/regions/1"]:
            driver.get(url + path)
            width = driver.execute_script("return document.documentElement.scrollWidth")
            viewport = driver.execute_script("return document.documentElement.clientWidth")
            check(width <= viewport, f"{path} is {width} px wide on a 320 px phone (viewport {viewport} px)")
        driver.set_window_size(1280, 900)
        print("console: the audit log, an alert, the alert form and the dashboard reflow on a 320 px phone")
        driver.get(url + "/admin")
        check("Puget Sound (12 devices)" in visible(driver) and "Bengaluru (1 device)" in visible(driver),
              f"the region picker does not count devices:\n{visible(driver)[:400]}")
        shoot(driver, "regions")
        roles_csrf_logout(driver, url, alert_id, failed)
    finally:
        driver.quit()
        state["sidecar"].stop()
        gorush.shutdown()
        oba.shutdown()
    # The folder is named only when it is kept (SIDECAR_SCREENSHOTS): a scratch one is deleted with the run.
    kept = f" in {SHOTS}" if os.environ.get("SIDECAR_SCREENSHOTS") else ""
    print(f"console: {len(os.listdir(SHOTS))} screenshots{kept}")


if __name__ == "__main__":
    main()
