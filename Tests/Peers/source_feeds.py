#!/usr/bin/env python3
"""What riders' apps get from an agency's own feed (issue 34), against the
real binary (`serve --demo`, region 9999) with a gorush stand-in: agency
feeds written with Google's gtfs-realtime-bindings the way producers really
write them, our feed decoded with the same bindings and read with each app's
display rules (replicated below from the apps' code, cited by file and
line), and checked by a third-party validator.

    source_feeds.py BIN [SCREENSHOT_DIR]

Parts, one summary line each:
  languages  untagged, en-US, es-US, zh-TW and tl texts: en-US, es-MX,
             zh-Hant-TW and fil-PH phones each get a non-empty dialog
             (Android) and bulletin (iOS), in their language when the source
             has it
  periods    a communication-only and an impact-only alert reach iOS (an
             active_period filled from them); one without any is open-ended
  scope      a route-scoped alert keeps its route, the agency in its selector
  fields     SPECIAL_EVENT, details, spoken texts, an image and a CANCELED
             trip kept; a javascript: URL dropped and reported; is_deleted
             withdraws the alert
  crowding   30 mirrored alerts (20 future INFO ones) and a live SEVERE
             authored alert: it leads the feed Android shows first, and the
             console's "Live" list is the feed's
  pushes     an es-US text reaches the es-MX device in Spanish
  secret     a sources key moving a source elsewhere leaves its key behind
  private    a loopback feed is refused without the source's allowance, and
             http_proxy in the server's environment does not carry a poll
             past it
  flood      a feed inventing a new id every poll: at most 4 pushes an hour
  validator  gtfs-rt-validator over the region's feed with a static GTFS
             written from the demo's own routes, stops and trips: no ERROR
  console    the review queue and a mirrored alert's page in Chromium
"""
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import alert_feed_server as feeds  # noqa: E402
import stops_and_faults as base  # noqa: E402
from google.transit import gtfs_realtime_pb2  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
SHOTS = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(base.WORK, "source-shots")
check, fail = base.check, base.fail
WORK = base.WORK
DB = os.path.join(WORK, "source-feeds.sqlite3")
PROXIED_DB = os.path.join(WORK, "proxied.sqlite3")
REGION, AGENCY = 9999, "demo"
NOW = int(time.time())
HOUR, DAY = 3600, 86400
PASSWORD = "correct horse battery staple"
Alert = gtfs_realtime_pb2.Alert
WARNING, SEVERE = Alert.WARNING, Alert.SEVERE
# Phones as the apps read their language: Android's Locale.getLanguage(),
# iOS's Locale.language.languageCode (both the bare code).
PHONES = {"en-US": "en", "es-MX": "es", "zh-Hant-TW": "zh", "fil-PH": "fil"}


# MARK: The apps' display rules, replicated from their code

def android_text(translated, language):
    """OneBusAway/onebusaway-android widealerts/GtfsAlertsHelper.kt:21-34
    (d2f473f9, 26.2.0): the translation whose language equals the phone's
    exactly; else the last one tagged exactly "en"; else "". Untagged ones
    are skipped."""
    fallback = ""
    for translation in translated.translation:
        if not translation.HasField("language"):
            continue
        if translation.language == language:
            return translation.text
        if translation.language == "en":
            fallback = translation.text
    return fallback


def android_shows(entity, stamp):
    """GtfsAlertsHelper.kt:36-51 (an agency_id in some selector; WARNING or
    SEVERE) and :63-67, :80-81 (communication_period, else active_period:
    some range started 0-24 h before `now`, which is header.timestamp,
    GtfsAlerts.kt:54-59)."""
    alert = entity.alert
    if not any(selector.HasField("agency_id") for selector in alert.informed_entity):
        return False
    if not alert.HasField("severity_level") or alert.severity_level not in (WARNING, SEVERE):
        return False
    periods = alert.communication_period if len(alert.communication_period) else alert.active_period
    return any(p.HasField("start") and 0 <= stamp - p.start <= DAY for p in periods)


def android_dialog(message):
    """GtfsAlerts.kt:73-85: the first entity in feed order that passes."""
    return next((entity for entity in message.entity if android_shows(entity, message.header.timestamp)), None)


def ios_text(translated, language):
    """OneBusAway/onebusaway-ios OBAKitCore/Models/REST/AgencyAlert.swift:48-64
    (c9dadbd8, 26.4.0): the first translation of the language code; else the
    first "en"; else the first of all."""
    translations = list(translated.translation)
    for wanted in (language, "en"):
        found = next((t.text for t in translations if t.language == wanted), None)
        if found is not None:
            return found
    return translations[0].text if translations else ""


def ios_agency(entity, agencies):
    """AgencyAlert.swift:33-38, 68-85: the first selector with an agency_id
    decides; it must be "" (region-wide) or an agency OneBusAway covers."""
    selector = next((s for s in entity.alert.informed_entity if s.HasField("agency_id")), None)
    return selector is not None and (selector.agency_id == "" or selector.agency_id in agencies)


def ios_bulletin_eligible(entity, now, agencies):
    """AgencyAlertsStore.swift:177-190 with AgencyAlert.swift:141-163: WARNING
    or SEVERE, and the first active_period's start within 8 h of now."""
    alert = entity.alert
    if not ios_agency(entity, agencies) or not alert.HasField("severity_level") or alert.severity_level not in (WARNING, SEVERE):
        return False
    if not len(alert.active_period) or not alert.active_period[0].HasField("start"):
        return False
    return abs(alert.active_period[0].start - now) < 8 * HOUR


# MARK: Helpers

def cli(*arguments, password=None, ok=True, database=DB):
    done = subprocess.run([BIN, *arguments, "--database", database], capture_output=True, text=True,
                          input=(password + "\n") if password else None)
    if ok:
        check(done.returncode == 0, f"sidecar {' '.join(arguments)}: {done.stderr}")
    return done


def api(sidecar, method, path, key, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    status, raw = sidecar.request(method, "/admin/api" + path, body=data, headers=headers, timeout=60)
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def our_feed(sidecar):
    status, body = sidecar.request("GET", f"/api/v1/regions/{REGION}/alerts", headers={"Accept-Encoding": "identity"})
    check(status == 200, f"our feed answered {status}")
    message = gtfs_realtime_pb2.FeedMessage()
    message.ParseFromString(body)
    return message, body


def texts(translated):
    return {translation.language: translation.text for translation in translated.translation}


class Recorder(base.Gorush):
    """gorush that records (token, title, body) of every notification."""

    def __init__(self):
        self.notifications = []
        super().__init__()
        self.RequestHandlerClass = RecorderHandler


class RecorderHandler(base.GorushHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            for notification in body.get("notifications", []):
                for token in notification.get("tokens", []):
                    self.server.pushes[token] = self.server.pushes.get(token, 0) + 1
                    self.server.notifications.append((token, notification.get("title"), notification.get("message")))
        answer = json.dumps({"counts": len(body.get("notifications", [])), "logs": [], "success": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class Proxy(ThreadingHTTPServer):
    """An HTTP proxy stand-in that only counts what it is asked."""

    def __init__(self):
        self.requests = 0
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class ProxyHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests += 1
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def add_source(sidecar, key, alerts, **settings):
    feed = feeds.AlertFeedServer(alerts)
    body = {"url": feed.url, "interval": 3600, "push": "off", "allow_private": True, **settings}
    status, created = api(sidecar, "POST", f"/regions/{REGION}/sources", key, body)
    check(status == 201, f"adding a source answered {status}: {created}")
    return feed, created["id"]


def poll(sidecar, key, source_id):
    status, report = api(sidecar, "POST", f"/sources/{source_id}/poll", key)
    check(status == 200, f"polling source {source_id} answered {status}: {report}")
    return report


# MARK: Feeds as producers write them

def language_alerts():
    active = [(NOW - 600, NOW + DAY)]
    return [
        feeds.make_alert("untagged", header="Elevator out at Central Library", description="Use the ramp on 4th Ave.",
                         severity="WARNING", active=active, entities=[{"agency_id": AGENCY}]),
        feeds.make_alert("tagged", header={"en-US": "Route 2X detoured", "es-US": "Ruta 2X desviada", "zh-TW": "2X路線改道",
                                           "tl": "Inilihis ang ruta 2X"},
                         description={"en-US": "Buses skip Stadium.", "es-US": "Los autobuses no paran en Stadium.",
                                      "zh-TW": "公車不停靠體育場。", "tl": "Hindi hihinto ang bus sa Stadium."},
                         severity="SEVERE", effect="DETOUR", active=active, entities=[{"agency_id": AGENCY}]),
        feeds.make_alert("upper", header={"ES": "Servicio reducido", "EN": "Reduced service"}, severity="WARNING", active=active,
                         entities=[{"agency_id": AGENCY}]),
    ]


def shape_alerts():
    # GTFS ids, as an agency's own feed carries them (OneBusAway's, demo_1, without the agency).
    cancelled = {"trip_id": "1_0_480", "route_id": "1", "start_date": time.strftime("%Y%m%d", time.gmtime(NOW)),
                 "schedule_relationship": gtfs_realtime_pb2.TripDescriptor.CANCELED}
    special = feeds.make_alert("special", header={"en": "Game day crowds"}, cause="SPECIAL_EVENT", effect="SIGNIFICANT_DELAYS",
                               severity="WARNING", active=[(NOW - 300, NOW + 6 * HOUR)],
                               entities=[{"route_id": "2", "route_type": 3, "direction_id": 1}, {"trip": cancelled}])
    alert = special.alert
    for name, value in (("cause_detail", "Stadium event"), ("effect_detail", "Expect 20-minute delays"),
                        ("tts_header_text", "Game day crowds on route two X"), ("tts_description_text", "Expect delays"),
                        ("image_alternative_text", "Map of the detour")):
        translation = getattr(alert, name).translation.add()
        translation.text, translation.language = value, "en"
    image = alert.image.localized_image.add()
    image.url, image.media_type, image.language = "https://agency.example/map.png", "image/png", "en"
    hostile = feeds.make_alert("hostile-url", header={"en": "Click for details"}, url={"en": "javascript:alert(1)"},
                               severity="WARNING", active=[(NOW - 60, NOW + HOUR)], entities=[{"agency_id": AGENCY}])
    return [
        feeds.make_alert("comm-only", header={"en": "Station entrance closed"}, severity="WARNING",
                         communication=[(NOW - 900, NOW + 2 * HOUR)], entities=[{"agency_id": AGENCY}]),
        feeds.make_alert("impact-only", header={"en": "Track work tonight"}, severity="WARNING",
                         impact=[(NOW - 120, NOW + 3 * HOUR)], entities=[{"agency_id": AGENCY}]),
        feeds.make_alert("no-period", header={"en": "Fare machines replaced"}, severity="WARNING", entities=[{"agency_id": AGENCY}]),
        feeds.make_alert("route", header={"en": "Route 3 stop moved"}, severity="WARNING", effect="STOP_MOVED",
                         active=[(NOW - 60, NOW + DAY)], entities=[{"route_id": "3"}]),
        special, hostile,
        feeds.make_alert("to-delete", header={"en": "Will be withdrawn"}, severity="WARNING", active=[(NOW - 60, NOW + DAY)]),
    ]


def crowd_alerts():
    """30 alerts from one source, 20 of them INFO and starting tomorrow."""
    alerts = []
    for index in range(30):
        future = index < 20
        alerts.append(feeds.make_alert(
            f"crowd-{index}", header={"en": f"{'Planned' if future else 'Current'} notice {index}"},
            severity="INFO" if future else "WARNING",
            active=[(NOW + DAY + index * 60, NOW + 2 * DAY)] if future else [(NOW - 120, NOW + DAY)],
            entities=[{"agency_id": AGENCY}]))
    return alerts


# MARK: Parts

def languages(sidecar, key, gorush):
    feed, source = add_source(sidecar, key, language_alerts())
    poll(sidecar, key, source)
    message, _ = our_feed(sidecar)
    ours = {entity.id: entity for entity in message.entity}
    seen = []
    for local, expected in (("untagged", {"en-US": "Elevator out at Central Library"}),
                            ("tagged", {"en-US": "Route 2X detoured", "es-MX": "Ruta 2X desviada", "zh-Hant-TW": "2X路線改道",
                                        "fil-PH": "Inilihis ang ruta 2X"}),
                            ("upper", {"en-US": "Reduced service", "es-MX": "Servicio reducido"})):
        entity = ours.get(f"Source_{source}_{local}")
        check(entity is not None, f"{local} is not in our feed: {sorted(ours)}")
        check(android_shows(entity, message.header.timestamp), f"Android would not show {local}: {entity}")
        check(ios_bulletin_eligible(entity, time.time(), {AGENCY}), f"iOS would not show {local}: {entity}")
        for phone, language in PHONES.items():
            android, ios = android_text(entity.alert.header_text, language), ios_text(entity.alert.header_text, language)
            check(android and ios, f"{local}: an empty dialog on a {phone} phone (Android {android!r}, iOS {ios!r}): {texts(entity.alert.header_text)}")
            want = expected.get(phone, expected["en-US"])
            check(android == want and ios == want, f"{local} on {phone}: Android {android!r}, iOS {ios!r}, expected {want!r}")
            seen.append(phone)
    feed.close()
    print(f"languages: untagged, en-US/es-US/zh-TW/tl and upper-case (EN, ES) texts: {len(seen)} phone readings of 3 alerts "
          f"(en-US, es-MX, zh-Hant-TW, fil-PH), every one non-empty and in the phone's language where the source has it, "
          f"by both apps' rules")
    return source


def shapes(sidecar, key):
    feed, source = add_source(sidecar, key, shape_alerts())
    report = poll(sidecar, key, source)
    check(any("javascript:" in line and "only http and https" in line for line in report["lines"]),
          f"the javascript: URL was not reported: {report}")
    message, body = our_feed(sidecar)
    ours = {entity.id: entity for entity in message.entity}
    mine = lambda local: ours[f"Source_{source}_{local}"].alert  # noqa: E731
    periods = feeds.raw_periods(body)
    for local in ("comm-only", "impact-only"):
        alert = mine(local)
        check(len(alert.active_period) == 1 and alert.active_period[0].start > 0, f"{local}: no active_period for iOS: {alert}")
        check(ios_bulletin_eligible(ours[f"Source_{source}_{local}"], time.time(), {AGENCY}), f"iOS would not show {local}")
    check(len(mine("comm-only").communication_period) == 1 and not len(mine("comm-only").impact_period), "communication kept, nothing invented")
    check(len(mine("impact-only").impact_period) == 1 and not len(mine("impact-only").communication_period), "impact kept")
    open_ended = periods[f"Source_{source}_no-period"][1]
    check(len(open_ended) == 1 and open_ended[0][0] and open_ended[0][1] is None, f"no period: {open_ended}")
    route = mine("route").informed_entity
    check([(s.agency_id, s.route_id) for s in route] == [(AGENCY, "3")], f"route scope: {route}")
    special = mine("special")
    check(special.cause == Alert.SPECIAL_EVENT, f"SPECIAL_EVENT became {special.cause}")
    check(texts(special.cause_detail) == {"en": "Stadium event"} and texts(special.effect_detail) == {"en": "Expect 20-minute delays"},
          f"details: {special}")
    check(texts(special.tts_header_text) and texts(special.tts_description_text) and texts(special.image_alternative_text), "spoken texts")
    check([i.url for i in special.image.localized_image] == ["https://agency.example/map.png"], "image")
    trips = [s.trip for s in special.informed_entity if s.HasField("trip")]
    check(trips and trips[0].schedule_relationship == gtfs_realtime_pb2.TripDescriptor.CANCELED, f"the trip's CANCELED: {trips}")
    check(all(s.agency_id == AGENCY for s in special.informed_entity), "the agency in each selector")
    routes = [s for s in special.informed_entity if s.HasField("route_id")]
    check(routes[0].route_type == 3 and routes[0].direction_id == 1, f"route_type and direction_id: {routes}")
    check(not len(mine("hostile-url").url.translation), f"a javascript: URL reached the feed: {mine('hostile-url').url}")
    # The agency withdraws one with is_deleted: it leaves the feed, never mirrored as live.
    withdrawn = [entity for entity in feed.entities if entity.id != "to-delete"]
    deleted = feeds.make_alert("to-delete", header={"en": "Will be withdrawn"})
    deleted.is_deleted = True
    feed.set_alerts(withdrawn + [deleted])
    report = poll(sidecar, key, source)
    check(any(line == "removed to-delete: the source marked it deleted" for line in report["lines"]), f"{report}")
    check(f"Source_{source}_to-delete" not in {e.id for e in our_feed(sidecar)[0].entity}, "is_deleted still live")
    feed.close()
    print("periods: a communication-only and an impact-only alert each got an active_period iOS shows (the source's other "
          "fields as sent); one without a period is open-ended from when it was first seen")
    print("scope: a route_id-only alert went out as {agency_id, route_id}: route-scoped, never agency-wide")
    print("fields: SPECIAL_EVENT, cause and effect details, spoken texts, an image, a CANCELED trip, route_type and "
          "direction_id kept; a javascript: URL dropped and reported by the poll; is_deleted withdrew its alert")


def crowding(sidecar, key, cookie):
    status, created = api(sidecar, "POST", f"/regions/{REGION}/alerts", key,
                          {"header": "Airport line suspended", "severity": "SEVERE", "effect": "NO_SERVICE",
                           "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 60))})
    check(status == 201, f"creating the authored alert answered {status}: {created}")
    authored = created["id"]
    check(api(sidecar, "POST", f"/alerts/{authored}/publish", key)[0] == 200, "publish")
    feed, source = add_source(sidecar, key, crowd_alerts())
    poll(sidecar, key, source)
    message, body = our_feed(sidecar)
    ids = [entity.id for entity in message.entity]
    check(f"Alert_{authored}" in ids, f"the live SEVERE authored alert was pushed out of the feed: {ids}")
    first = android_dialog(message)
    check(first is not None and first.id == f"Alert_{authored}", f"Android's dialog shows {first.id if first else None}, not the SEVERE alert")
    live = [i for i in ids if i.startswith(f"Source_{source}_crowd-") and int(i.rsplit("-", 1)[1]) >= 20]
    check(len(live) == 10, f"the source's 10 live alerts: {live}")
    check(len(body) < 1 << 20 and len(ids) <= 100, f"{len(ids)} alerts, {len(body)} bytes")
    status, headers, page = fetch(sidecar.url(f"/admin/regions/{REGION}/alerts"), cookie)
    live_section = page[page.index("Live: riders see these now"):].split("<h2", 1)[0]
    check("Airport line suspended" in live_section, "the console's Live list is not the feed's")
    check("Planned notice 0" not in live_section, "an upcoming alert is listed as live")
    check("Published but not in the feed" in page, "no list of what the feed left out")
    feed.close()
    print(f"crowding: 30 mirrored alerts (20 future INFO) and a live SEVERE authored alert: the authored one leads the feed and "
          f"Android's dialog; {len(ids)} alerts, {len(body)} bytes; the source's 10 live ones before its future ones; the console's "
          f"Live list matches")


def pushes(sidecar, key, gorush):
    for token, locale in (("phone-en", "en-US"), ("phone-es", "es-MX"), ("phone-zh", "zh-Hant-TW"), ("phone-fil", "fil-PH")):
        status, _ = sidecar.request("POST", f"/api/v2/regions/{REGION}/push_registrations",
                                    body=urllib.parse.urlencode({"token": token, "operating_system": "android", "locale": locale}),
                                    headers={"Content-Type": "application/x-www-form-urlencoded"})
        check(status in (200, 201, 204), f"registering {token} answered {status}")
    feed, source = add_source(sidecar, key, [], push="auto")
    poll(sidecar, key, source)  # an empty baseline
    feed.set_alerts([feeds.make_alert("pushed", header={"en-US": "Line 1 closed", "es-US": "Línea 1 cerrada", "zh-TW": "1號線關閉"},
                                      severity="SEVERE", effect="NO_SERVICE", active=[(NOW - 60, NOW + DAY)],
                                      entities=[{"agency_id": AGENCY}])])
    report = poll(sidecar, key, source)
    check(any(line.startswith("push pushed: send") for line in report["lines"]), f"no push: {report}")
    base.wait_for(lambda: all(gorush.pushes.get(t) for t in ("phone-en", "phone-es", "phone-zh", "phone-fil")), 60,
                  f"not every phone got the push: {gorush.pushes}")
    titles = {token: title for token, title, _ in gorush.notifications}
    check(titles["phone-es"] == "Línea 1 cerrada" and titles["phone-zh"] == "1號線關閉" and titles["phone-en"] == "Line 1 closed",
          f"pushes not in the phone's language: {titles}")
    feed.close()
    print(f"pushes: es-US and zh-TW source texts reached the es-MX and zh-Hant-TW devices in their languages, the others in "
          f"English ({len(titles)} devices)")


def secret(sidecar, key):
    feed = feeds.AlertFeedServer([])
    elsewhere = feeds.AlertFeedServer([])
    secret_file = os.path.join(WORK, "feed-key")
    with open(secret_file, "w") as handle:
        handle.write("agency-secret-123")
    status, created = api(sidecar, "POST", f"/regions/{REGION}/sources", key, {"url": feed.url, "allow_private": True})
    check(status == 201, f"{created}")
    # The header is set on the server, as an operator does.
    cli("source", "edit", str(created["id"]), "--header-file", f"X-Api-Key:{secret_file}")
    poll(sidecar, key, created["id"])
    check("agency-secret-123" in feed.header_values("X-Api-Key"), "the agency's feed did not get its key")
    sources_key = cli("apikey", "create", "--name", "region editor", "--region", "all", "--sources").stdout.strip()
    plain_key = cli("apikey", "create", "--name", "plain", "--region", "all", "--push").stdout.strip()
    status, _ = api(sidecar, "PATCH", f"/sources/{created['id']}", plain_key, {"url": elsewhere.url})
    check(status == 403, f"a plain region key changed a source: {status}")
    status, moved = api(sidecar, "PATCH", f"/sources/{created['id']}", sources_key, {"url": elsewhere.url})
    check(status == 422 and "loopback" in json.dumps(moved), f"the allowance followed the URL: {status} {moved}")
    status, moved = api(sidecar, "PATCH", f"/sources/{created['id']}", key, {"url": elsewhere.url, "allow_private": True})
    check(status == 200 and moved["headers"] == [], f"{status} {moved}")
    poll(sidecar, key, created["id"])
    check(elsewhere.requests >= 1 and not any(elsewhere.header_values("X-Api-Key")), "the key followed the URL to another host")
    feed.close()
    elsewhere.close()
    print("secret: a plain region key may not change a source (403); a sources key's new URL lost the loopback allowance; "
          "an admin's new URL dropped the X-Api-Key header, and the new host never saw the key")


def private(sidecar, key, proxied, proxy):
    feed = feeds.AlertFeedServer([feeds.make_alert("p", header={"en": "Private"}, active=[(NOW, None)])])
    status, refused = api(sidecar, "POST", f"/regions/{REGION}/sources", key, {"url": feed.url})
    check(status == 422 and "loopback" in json.dumps(refused), f"a loopback feed was accepted: {status} {refused}")
    status, refused = api(sidecar, "POST", f"/regions/{REGION}/sources", key,
                          {"url": f"http://localhost.:{feed.server_address[1]}/gtfs-rt/alerts.pb"})
    check(status in (201, 422), f"{status}")
    if status == 201:
        report = poll(sidecar, key, refused["id"])
        check(report["failure"] and "refused" in report["failure"], f"a name for loopback was polled: {report}")
    check(feed.requests == 0, "the private feed was asked")
    # A server with http_proxy set: polls ignore it (no bypass of the address check, no detour).
    proxied_key = cli("apikey", "create", "--name", "proxied", "--region", "all", "--admin", "--sources",
                      database=PROXIED_DB).stdout.strip()
    status, created = api(proxied, "POST", f"/regions/{REGION}/sources", proxied_key, {"url": feed.url, "allow_private": True})
    check(status == 201, f"{created}")
    report = poll(proxied, proxied_key, created["id"])
    check(report["failure"] is None and feed.requests == 1 and proxy.requests == 0,
          f"with http_proxy set the poll went through the proxy ({proxy.requests}) or failed: {report}")
    feed.close()
    print("private: loopback refused without allow_private (at save and on the connected socket); with http_proxy in the "
          "environment an allowed poll went direct and the proxy saw nothing")


def flood(sidecar, key, gorush):
    feed, source = add_source(sidecar, key, [], push="auto")
    poll(sidecar, key, source)
    held = 0
    for index in range(8):
        feed.set_alerts([feeds.make_alert(f"flip-{index}", header={"en": "Delays"}, severity="SEVERE", active=[(NOW - 60, NOW + DAY)],
                                          entities=[{"agency_id": AGENCY}])])
        report = poll(sidecar, key, source)
        held += sum(1 for line in report["lines"] if "in the last hour (at most 4)" in line)
    status, shown = api(sidecar, "GET", f"/sources/{source}", key)
    check(shown["status"]["pushes"] == 4, f"pushes: {shown['status']}")
    check(held >= 4 and "approve to push anyway" in (shown["status"]["held"] or ""), f"held {held}: {shown['status']}")
    feed.close()
    print(f"flood: a feed inventing a new id at each of 8 polls pushed 4 times; {held} held for review with the reason shown")


def demo_gtfs(sidecar):
    """A static GTFS of the demo region from its own OneBusAway API, ids as
    GTFS has them: OneBusAway's without their agency prefix (demo_2002 is
    agency demo's stop 2002), which is what a feed's selectors name."""
    def gtfs(oba_id):
        return oba_id.split("_", 1)[1] if oba_id.startswith("demo_") else oba_id

    def oba(path):
        status, body = sidecar.request("GET", f"/demo/oba/api/where/{path}")
        check(status == 200, f"demo OBA {path}: {status}")
        return json.loads(body)["data"]

    routes = oba("routes-for-agency/demo.json")["list"]
    stops, trips = {}, set()
    for route in routes:
        for stop in oba(f"stops-for-route/{route['id']}.json")["references"]["stops"]:
            stops[stop["id"]] = stop
    for stop_id in stops:
        for arrival in oba(f"arrivals-and-departures-for-stop/{stop_id}.json")["entry"]["arrivalsAndDepartures"]:
            trips.add((arrival["tripId"], arrival["routeId"]))
    trips.add(("demo_1_0_480", "demo_1"))
    path = os.path.join(WORK, "demo-gtfs.zip")
    today = time.strftime("%Y%m%d", time.gmtime(NOW - DAY))
    later = time.strftime("%Y%m%d", time.gmtime(NOW + 30 * DAY))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("agency.txt", "agency_id,agency_name,agency_url,agency_timezone\ndemo,Demo Transit,https://example.org,America/Los_Angeles\n")
        archive.writestr("routes.txt", "route_id,agency_id,route_short_name,route_long_name,route_type\n" + "".join(
            f"{gtfs(r['id'])},demo,{r['shortName']},{r['longName']},3\n" for r in routes))
        archive.writestr("stops.txt", "stop_id,stop_name,stop_lat,stop_lon\n" + "".join(
            f"{gtfs(s['id'])},{s['name']},{s['lat']},{s['lon']}\n" for s in stops.values()))
        archive.writestr("calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                         f"daily,1,1,1,1,1,1,1,{today},{later}\n")
        archive.writestr("trips.txt", "route_id,service_id,trip_id\n" + "".join(
            f"{gtfs(route)},daily,{gtfs(trip)}\n" for trip, route in sorted(trips)))
        first = next(iter(stops))
        archive.writestr("stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n" + "".join(
            f"{gtfs(trip)},08:00:00,08:00:00,{gtfs(first)},1\n" for trip, _ in sorted(trips)))
    return path


def validator(sidecar, key):
    gtfs = demo_gtfs(sidecar)
    folder = os.path.join(WORK, "validator-feeds")
    os.makedirs(folder, exist_ok=True)
    # Two snapshots a change apart (E017: a changed feed keeps its stamp).
    first_message, first = our_feed(sidecar)
    with open(os.path.join(folder, "alerts-1.pb"), "wb") as handle:
        handle.write(first)
    # The stamp counts whole seconds and never runs ahead of the clock: a
    # change in the same second as the last stamp cannot move it, so the
    # change waits for the clock to pass it (an event, not a fixed wait).
    while time.time() < first_message.header.timestamp + 1:
        time.sleep(0.05)
    status, created = api(sidecar, "POST", f"/regions/{REGION}/alerts", key,
                          {"header": "Validator probe", "severity": "INFO", "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW))})
    check(status == 201, f"{created}")
    api(sidecar, "POST", f"/alerts/{created['id']}/publish", key)
    _, second = our_feed(sidecar)
    with open(os.path.join(folder, "alerts-2.pb"), "wb") as handle:
        handle.write(second)
    report = os.path.join(WORK, "validator-report")
    tool = os.path.join(os.path.dirname(sys.executable), "gtfs-rt-validator")
    done = subprocess.run([tool, "-gtfs", gtfs, "-rt", folder, "--sort", "name", "--out", report], capture_output=True, text=True, timeout=300)
    check(done.returncode == 0, f"gtfs-rt-validator failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    results = json.load(open(os.path.join(report, "report.json")))
    errors = [n for n in results.get("notices", []) if n.get("severity") == "ERROR"]
    check(not errors, "gtfs-rt-validator ERRORs:\n" + json.dumps(errors, indent=1)[:4000])
    warnings = sorted({n.get("code") for n in results.get("notices", []) if n.get("severity") == "WARNING"})
    # Each remaining warning is explained in docs/alert-sources.md and docs/rider-api.md ("Service alerts").
    explained = {"S025", "P001", "W007", "W008"}
    check(set(warnings) <= explained, f"warnings the docs do not explain: {sorted(set(warnings) - explained)}")
    print(f"validator: gtfs-rt-validator over two snapshots of the region's feed ({len(first)} and {len(second)} bytes, authored and "
          f"mirrored alerts of every kind) with a GTFS of the demo's routes, stops and trips: no ERROR; warnings {warnings or 'none'} "
          f"(explained in the docs)")


def fetch(url, cookie, method="GET", fields=None):
    data = urllib.parse.urlencode(fields).encode() if fields is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Cookie": f"sidecar_session={cookie}",
                                                                           "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def console(sidecar, key, driver):
    import console as ui  # the console check's browser helpers
    from selenium.webdriver.common.by import By
    feed, source = add_source(sidecar, key, [], push="review")
    poll(sidecar, key, source)
    feed.set_alerts([feeds.make_alert("review-me", header={"en": "Bridge closed", "es": "Puente cerrado"}, severity="SEVERE",
                                      active=[(NOW - 60, NOW + DAY)], entities=[{"agency_id": AGENCY}])])
    poll(sidecar, key, source)
    driver.get(sidecar.url(f"/admin/regions/{REGION}/sources"))
    ui.wait_text(driver, "Bridge closed")
    check("to review)" in driver.page_source, "the navigation does not count the review")
    ui.shoot(driver, "source-review-queue")
    driver.find_element(By.XPATH, "//tr[.//a[normalize-space()='Bridge closed']]//a[contains(., 'Approve: push to everyone')]").click()
    ui.wait_text(driver, "What each language gets")
    check("Puente cerrado" in driver.page_source, "the confirmation shows no Spanish preview:\n" + ui.visible(driver)[:3000])
    ui.shoot(driver, "source-review-confirm")
    ui.submit(driver)
    ui.wait_text(driver, "Approved: the push has started.")
    ui.refresh(driver)
    status, _, shown = fetch(sidecar.url(f"/admin/regions/{REGION}/sources"), ui.session_cookie(driver))
    check("review-me" not in shown and "Bridge closed" not in shown.split("Sources</h2>")[0], "the review stayed after approval")
    check(api(sidecar, "GET", f"/sources/{source}", key)[1]["status"]["pushes"] == 1, "an approval and a refresh pushed more than once")
    # A mirrored alert's page: where it comes from, what can be done, nothing that is refused.
    driver.get(sidecar.url(f"/admin/regions/{REGION}/alerts"))
    link = driver.find_element(By.LINK_TEXT, "Bridge closed")
    link.click()
    ui.wait_text(driver, "Mirrored from")
    page = driver.page_source
    check("Dismiss from the feed" in page and "Publish" not in ui.visible(driver).replace("Published", ""), "controls on a mirrored alert")
    ui.shoot(driver, "source-mirrored-alert")
    driver.find_element(By.XPATH, "//button[normalize-space()='Dismiss from the feed']").click()
    ui.wait_text(driver, "Dismissed from the feed")
    check(not [e for e in our_feed(sidecar)[0].entity if e.id == f"Source_{source}_review-me"], "dismissed but still in the feed")
    feed.close()
    print("console: the review queue counted in the navigation; approving opened the send confirmation with each language's "
          "copy and pushed once (a refresh repeated nothing); the mirrored alert's page named its source, offered dismissing "
          "and pushing, no editing; dismissing took it out of the feed")


def region_wide(sidecar, key):
    """A region-wide alert goes out with one selector whose agency_id is
    present and empty: iOS shows it region-wide (AgencyAlert.swift:76-83) and
    Android's dialog takes any selector that has an agency_id
    (GtfsAlertsHelper.kt isAgencyWideAlert: hasAgencyId())."""
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    status, created = api(sidecar, "POST", f"/regions/{REGION}/alerts", key,
                          {"header": "All agencies: storm schedule", "severity": "SEVERE", "start": start, "region_wide": True})
    check(status == 201 and created.get("region_wide") is True and created.get("agency_id") == "", f"region-wide create: {created}")
    check(api(sidecar, "POST", f"/alerts/{created['id']}/publish", key)[0] == 200, "publish the region-wide alert")
    message, _ = our_feed(sidecar)
    entity = next((e for e in message.entity if e.id == f"Alert_{created['id']}"), None)
    check(entity is not None, "the region-wide alert is not in the feed")
    selectors = list(entity.alert.informed_entity)
    check(len(selectors) == 1 and selectors[0].HasField("agency_id") and selectors[0].agency_id == "" and not selectors[0].HasField("route_id"),
          f"region-wide selectors: {selectors}")
    check(ios_agency(entity, {AGENCY}) and ios_bulletin_eligible(entity, time.time(), {AGENCY}), "iOS would not show the region-wide alert")
    check(android_shows(entity, message.header.timestamp), "Android's dialog would not show the region-wide alert")
    print("region-wide: one selector with a present, empty agency_id; iOS shows it region-wide and Android's dialog takes it, by each app's rules")


def main():
    os.makedirs(SHOTS, exist_ok=True)
    cli("migrate")
    cli("user", "create", "--email", "admin@example.org", "--role", "admin", password=PASSWORD)
    key = cli("apikey", "create", "--name", "operator", "--region", "all", "--admin", "--push", "--sources").stdout.strip()
    gorush = Recorder()
    arguments = ["--demo", "--gorush-url", gorush.url, "--push-registration-limit", "0", "--admin-api-limit", "0"]
    sidecar = base.Sidecar(DB, *arguments)
    proxy = Proxy()
    environment = {**os.environ, "http_proxy": f"http://127.0.0.1:{proxy.server_address[1]}",
                   "HTTPS_PROXY": f"http://127.0.0.1:{proxy.server_address[1]}"}
    saved = dict(os.environ)
    os.environ.update(environment)
    try:
        proxied = base.Sidecar(PROXIED_DB, "--demo")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    driver = None
    try:
        languages(sidecar, key, gorush)
        shapes(sidecar, key)
        import console as ui
        driver = ui.browser()
        ui.sign_in(driver, sidecar.url(""), "admin@example.org")
        crowding(sidecar, key, ui.session_cookie(driver))
        pushes(sidecar, key, gorush)
        secret(sidecar, key)
        flood(sidecar, key, gorush)
        private(sidecar, key, proxied, proxy)
        validator(sidecar, key)
        console(sidecar, key, driver)
        region_wide(sidecar, key)
    finally:
        if driver:
            driver.quit()
        for server in (sidecar, proxied):
            if server.process.poll() is None:
                server.stop()
        gorush.shutdown()
        proxy.shutdown()
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
