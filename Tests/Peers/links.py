#!/usr/bin/env python3
"""The links the apps make and follow, checked with other people's tools.

    links.py BIN [SCREENSHOT_DIR]

  - `sidecar links add-region` for values with ?, &, #, spaces and non-ASCII,
    read back with Python's URL parser; its PNG QR code decoded by zbarimg
    (zbar-tools), its SVG QR code rendered by Chromium and decoded too;
  - the apple-app-site-association and assetlinks documents served as JSON
    without a redirect, in the shapes Apple and Google document;
  - share pages against a OneBusAway stand-in serving the apps' fixtures, in
    headless Chromium: OpenGraph tags parsed by Python's HTML parser, the
    add-region page's QR code photographed and decoded by zbarimg.
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402
from selenium import webdriver  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
SHOTS = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(base.WORK, "link-shots")
os.makedirs(SHOTS, exist_ok=True)
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "ios")
check = base.check


def zbar(path):
    done = subprocess.run(["zbarimg", "-q", "--raw", path], capture_output=True, text=True)
    check(done.returncode == 0, f"zbarimg found no code in {path}: {done.stderr}")
    return done.stdout.strip()


def browser():
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=800,900",
                     "--force-device-scale-factor=1"]:
        options.add_argument(argument)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"))


def add_region_links(driver):
    cases = [
        ("Puget Sound", "https://api.pugetsound.onebusaway.org/", "https://sidecar.example.org", None, "1"),
        ("Région #1 & co ☃", "https://oba.example.com/api?key=a&b=c#frag", "https://obaco.example.com/api?a=1&b=2", "https://otp.example.com/?x=y%20z",
         "9223372036854775807"),
    ]
    for number, (name, oba, sidecar, otp, region_id) in enumerate(cases):
        arguments = ["links", "add-region", "--region-id", region_id, "--name", name, "--oba-url", oba, "--sidecar-url", sidecar]
        if otp:
            arguments += ["--otp-url", otp]
        png, svg = os.path.join(base.WORK, f"qr-{number}.png"), os.path.join(base.WORK, f"qr-{number}.svg")
        done = subprocess.run([BIN, *arguments, "--qr", png], capture_output=True, text=True)
        check(done.returncode == 0, f"links add-region: {done.stderr}")
        link = done.stdout.strip()
        parsed = urllib.parse.urlsplit(link)
        check(parsed.scheme == "onebusaway" and parsed.netloc == "add-region", link)
        items = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        expected = {"name": name, "oba-url": oba, "sidecar-url": sidecar, "region-id": region_id, **({"otp-url": otp} if otp else {})}
        check(items == expected, f"{link} reads back as {items}")
        check("+" not in parsed.query, "a space must be %20: iOS does not read + as a space")
        check(zbar(png) == link, "the PNG QR code does not decode to the link")
        done = subprocess.run([BIN, *arguments, "--qr", svg], capture_output=True, text=True)
        check(done.returncode == 0 and done.stdout.strip() == link, "the SVG run printed another link")
        driver.get("file://" + svg)
        photo = os.path.join(base.WORK, f"qr-{number}-svg.png")
        driver.save_screenshot(photo)
        check(zbar(photo) == link, "the SVG QR code, as Chromium draws it, does not decode to the link")
    refused = subprocess.run([BIN, "links", "add-region", "--region-id", "1", "--name", "X", "--oba-url", "oba.example.com",
                              "--sidecar-url", "https://s.example.org"], capture_output=True, text=True)
    check(refused.returncode == 1 and "absolute http(s) URL" in refused.stderr, f"a bare host was accepted: {refused.stdout}{refused.stderr}")
    for bad in ["-1", "abc", "1.5", "1" * 30, "9223372036854775808", ""]:
        refused = subprocess.run([BIN, "links", "add-region", f"--region-id={bad}", "--name", "X", "--oba-url", "https://oba.example.com",
                                  "--sidecar-url", "https://s.example.org"], capture_output=True, text=True)
        check(refused.returncode != 0 and "--region-id" in refused.stderr and not refused.stdout, f"--region-id {bad!r}: {refused.stdout}{refused.stderr}")
    # A directory region: every value the apps read, and a trailing slash never reaches the link.
    regions = os.path.join(base.WORK, "full-regions.json")
    json.dump({"data": {"list": [{"id": 7, "regionName": "Tampa Bay", "obaBaseUrl": "https://api.tampa.example.org/api/",
                                  "sidecarBaseUrl": "https://sidecar.tampa.example.org/", "otpBaseUrl": "https://otp.tampa.example.org/otp/",
                                  "otpBaseGraphqlUrl": "https://otp.tampa.example.org/graphql", "supportsOtpGraphqlBikeshare": True,
                                  "umamiAnalytics": {"url": "https://analytics.example.org", "id": "abc-123"}}]}}, open(regions, "w"))
    done = subprocess.run([BIN, "links", "add-region", "--region", "7", "--regions", regions], capture_output=True, text=True)
    check(done.returncode == 0, done.stderr)
    items = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(done.stdout.strip()).query))
    check(items == {"name": "Tampa Bay", "oba-url": "https://api.tampa.example.org/api/", "region-id": "7",
                    "sidecar-url": "https://sidecar.tampa.example.org", "otp-url": "https://otp.tampa.example.org/otp/",
                    "otp-graphql-url": "https://otp.tampa.example.org/graphql", "otp-graphql-bikeshare": "true",
                    "umami-url": "https://analytics.example.org", "umami-id": "abc-123"}, f"directory link: {items}")
    # --region-id of a directory region takes its values as defaults; flags override.
    done = subprocess.run([BIN, "links", "add-region", "--region-id", "7", "--regions", regions, "--name", "Tampa"], capture_output=True, text=True)
    items = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(done.stdout.strip()).query))
    check(done.returncode == 0 and items["name"] == "Tampa" and items["umami-id"] == "abc-123" and items["region-id"] == "7", f"{items} {done.stderr}")
    # Cleartext: Android allows http only to 10.0.2.2 (its network security
    # config) and iOS ATS allows none, so an http sidecar URL is refused.
    explicit = [BIN, "links", "add-region", "--region-id", "9", "--name", "Plain", "--oba-url", "https://oba.example.org"]
    plain = subprocess.run(explicit + ["--sidecar-url", "http://sidecar.example.org"], capture_output=True, text=True)
    check(plain.returncode == 1 and not plain.stdout and "cleartext http" in plain.stderr and "10.0.2.2" in plain.stderr,
          f"an http sidecar URL was not refused with the reason: {plain.stdout}{plain.stderr}")
    for development in ["http://10.0.2.2:8080", "http://127.0.0.1:8080", "http://localhost:8080"]:
        done = subprocess.run(explicit + ["--sidecar-url", development], capture_output=True, text=True)
        check(done.returncode == 0, f"{development} (development) was refused: {done.stderr}")
    allowed = subprocess.run(explicit + ["--sidecar-url", "http://sidecar.example.org", "--allow-http", "true"], capture_output=True, text=True)
    check(allowed.returncode == 0 and "sidecar-url=http%3A%2F%2Fsidecar.example.org" in allowed.stdout, f"--allow-http true: {allowed.stderr}")
    print(f"add-region: {len(cases)} links with ?, &, #, spaces and non-ASCII read back field by field, region-id included; "
          "their PNG and SVG QR codes decoded by zbarimg to the same link; 6 bad --region-id values refused; a directory region "
          "carries otp, GraphQL, bikeshare and Umami values; an http sidecar URL refused with the reason (10.0.2.2, loopback "
          "and --allow-http true pass)")


class FixtureOBA(base.StandIn):
    def __init__(self):
        super().__init__(FixtureHandler)
        self.start()

    @property
    def url(self):
        return self.origin + "/"


class FixtureHandler(base.QuietHandler):

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        files = {"/api/where/arrivals-and-departures-for-stop/1_75403.json": "arrivals_and_departures_for_stop_1_75403.json"}
        name = files.get(path)
        if name:
            body, status = open(os.path.join(FIXTURES, name), "rb").read(), 200
        else:
            body, status = b'{"code":404,"text":"resource not found","version":2,"currentTime":1}', 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Meta(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = {}

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        key = attributes.get("property") or attributes.get("name")
        if tag == "meta" and key:
            self.tags[key] = attributes.get("content")


def get(url):
    opener = urllib.request.build_opener(NoRedirect())
    try:
        with opener.open(url, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def served(driver):
    oba = FixtureOBA()
    regions = os.path.join(base.WORK, "link-regions.json")
    json.dump({"data": {"list": [{"id": 1, "regionName": "Puget Sound", "obaBaseUrl": oba.url, "sidecarBaseUrl": None}]}}, open(regions, "w"))
    fingerprint = ":".join(["5A"] * 32)
    database = os.path.join(base.WORK, "links.sqlite3")
    base.cli(database, "region", "set", "--id", "1", "--agency-id", "1", "--timezone", "America/Los_Angeles")
    sidecar = base.Sidecar(database, "--regions", regions, "--public-url", "https://sidecar.example.org",
                           "--apple-app-ids", "ABCDE12345.org.onebusaway.iphone", "--android-app-links", f"org.onebusaway.android:{fingerprint}",
                           "--app-store-url", "https://apps.apple.com/app/id329380089")
    url = f"http://127.0.0.1:{sidecar.port}"
    try:
        status, headers, body = get(url + "/.well-known/apple-app-site-association")
        check(status == 200 and headers["Content-Type"].startswith("application/json"), f"AASA: {status} {headers}")
        aasa = json.loads(body)
        details = aasa["applinks"]["details"]
        check(len(details) == 1 and "paths" not in details[0], details)
        modern = details[0]
        check(modern["appIDs"] == ["ABCDE12345.org.onebusaway.iphone"], modern)
        check([c["/"] for c in modern["components"]] == ["/regions/*/stops/*/trips", "/regions/*/stops/*/*", "/regions/*/stops/*"],
              modern["components"])
        check(modern["components"][0].get("?") == {"trip_id": "?*"} and modern["components"][1].get("exclude") is True, modern["components"])
        check("/admin" not in body.decode() and "/api" not in body.decode(), "AASA claims admin or API paths")
        status, headers, body = get(url + "/.well-known/assetlinks.json")
        statements = json.loads(body)
        check(status == 200 and statements == [{"relation": ["delegate_permission/common.handle_all_urls"],
                                                "target": {"namespace": "android_app", "package_name": "org.onebusaway.android",
                                                           "sha256_cert_fingerprints": [fingerprint]}}], f"assetlinks: {statements}")

        trip = "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200.0&stop_sequence=41"
        status, _, body = get(url + trip)
        meta = Meta()
        meta.feed(body.decode())
        check(status == 200 and meta.tags.get("og:title") == "Route 75 to UNIVERSITY DISTRICT NORTHGATE · STEVENS WAY & BENTON LN",
              f"trip preview title: {meta.tags}")
        check(meta.tags.get("twitter:card") == "summary" and meta.tags.get("og:url", "").startswith("https://sidecar.example.org/regions/1/stops/"),
              meta.tags)
        for name, path in [("stop", "/regions/1/stops/1_75403"), ("trip", trip), ("add-region", "/regions/1/add"), ("not-found", "/regions/1/stops/nowhere")]:
            driver.set_window_size(420, 900)
            driver.get(url + path)
            height = driver.execute_script("return Math.ceil(document.body.getBoundingClientRect().height)")
            driver.set_window_size(420, max(height + 40, 500))
            driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
        # The poster's QR code, photographed as a phone camera would, holds the region's link.
        driver.set_window_size(800, 1100)
        driver.get(url + "/regions/1/add")
        photo = os.path.join(base.WORK, "poster.png")
        driver.save_screenshot(photo)
        printed = subprocess.run([BIN, "links", "add-region", "--region", "1", "--regions", regions, "--sidecar-url", "https://sidecar.example.org"],
                                 capture_output=True, text=True).stdout.strip()
        check("region-id=1" in printed, printed)
        check(zbar(photo) == printed, "the add-region page's QR code does not hold the CLI's link")
        status, _, body = get(url + "/regions/1/add")
        check(status == 200 and "26.3.0" in body.decode() and "26.2.0" in body.decode(), "the poster names the app versions")
    finally:
        sidecar.stop()
        oba.shutdown()
    print("links: AASA (components: trips with trip_id, deeper paths excluded, stop pages) and assetlinks served as JSON; the trip preview reads "
          "'Route 75 to UNIVERSITY DISTRICT NORTHGATE · STEVENS WAY & BENTON LN'; the add-region page's QR code, photographed "
          f"in Chromium, decodes to the CLI's link; screenshots in {SHOTS}")


def main():
    driver = browser()
    try:
        add_region_links(driver)
        served(driver)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
