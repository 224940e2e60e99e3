#!/usr/bin/env python3
"""Alert sources (issue 27) against the real binary: GTFS-realtime Alerts
feeds written with Google's gtfs-realtime-bindings (alert_feed_server.py),
polled through the CLI and a running `sidecar serve` that pushes through a
gorush stand-in, on one SQLite database.

    sources.py BIN

Parts, one summary line each:
  baseline     a new source's first poll keeps its alerts and pushes none
  conditional  a second poll of unchanged content is answered 304
  mapping      every field and translation of the source's alerts in our feed
               as Source_{id}_{entity}, the region's agency added where
               missing; authored alerts kept; push-only sources' left out
  rules        auto: new SEVERE agency- and route-wide alerts push; INFO, an
               effect outside --effects, stop- and trip-scoped alerts do not
  review       review, approve (once), dismiss
  quiet hours  a push inside them is deferred
  flood        25 new alerts at once (threshold 20) all wait for review
  bad input    duplicate ids, no text, 10,000 informed entities, a 1 MB
               header, invalid UTF-8, the year 30000: no crash, no push, the
               problem named
  upstreams    hang, 500, HTML, 20 MB, truncated, cut short, garbage (and a
               gzip bomb): `failed:`, the last good alerts kept, the server up
  refused      link-local, metadata and the sidecar's own address
  secrets      --header-file: the header arrives; its value is printed,
               logged and stored nowhere
  metrics      the source families on --metrics-listen
  pushes       each pushed alert reaches the devices in their language
  once         a correction, a re-poll and a restart push nothing again; no
               alert pushed twice, none the rules hold back pushed at all

The CLI's own sends (a poll's pushes, an approval) wait for the running
server to claim them once their lease (the CLI's --send-lease-seconds, 30 s
by default) lapses: the pushes are awaited near the end, after the parts
that need no server work.
"""
import collections
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import alert_feed_server as feeds  # noqa: E402
import stops_and_faults as base  # noqa: E402  (the stand-ins and the process wrapper)
from google.transit import gtfs_realtime_pb2  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
check, fail = base.check, base.fail
WORK = base.WORK
DB = os.path.join(WORK, "sources.sqlite3")
AGENCY = "1"
NOW = int(time.time())
HOUR, DAY = 3600, 86400
# The devices every push goes to: English (no locale), Spanish, a test device.
DEVICES = {"en": "device-en", "es": "device-es", "test": "device-test"}
FEEDS = []


# MARK: The command line

def run(*arguments, timeout=60):
    """`sidecar ARGUMENTS --database DB`, whatever its exit status."""
    try:
        return subprocess.run([BIN, *arguments, "--database", DB], capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"sidecar {' '.join(arguments)} did not finish within {timeout} s")


def cli(*arguments):
    done = run(*arguments)
    check(done.returncode == 0, f"sidecar {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def clock(minutes):
    """HH:MM of minutes after midnight, wrapped into one day."""
    minutes %= 1440
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


# `added E`, `changed E`, `removed E`, `baseline E`, `push E: send N to all`,
# `review E: REASON`, `deferred E until TIME`; E is the source's entity id,
# perhaps printed as our Source_{id}_E.
CHANGE = re.compile(r"^(added|changed|removed|baseline|push|review|deferred) (\S+?)(:)?(?: (.*))?$")


class Poll:
    """One `sidecar source poll ID`: its exit status, output and change lines."""

    def __init__(self, source, done, elapsed):
        self.source = source
        self.code, self.out, self.err, self.elapsed = done.returncode, done.stdout, done.stderr, elapsed
        self.lines = [line.strip() for line in self.out.splitlines() if line.strip()]
        # [(verb, entity as the source names it, rest, entity as printed)]
        self.changes = []
        for line in self.lines:
            found = CHANGE.match(line)
            if found:
                printed = found.group(2)
                self.changes.append((found.group(1), source.local(printed), found.group(4) or "", printed))

    def verbs(self, entity):
        return [verb for verb, local, _, _ in self.changes if local == entity]

    def rest(self, verb, entity):
        return next((rest for v, local, rest, _ in self.changes if v == verb and local == entity), None)

    def entities(self, verb):
        return {local for v, local, _, _ in self.changes if v == verb}

    @property
    def summary(self):
        return self.lines[-1] if self.lines else ""

    def __str__(self):
        return f"exit {self.code}, stdout:\n{self.out[-3000:]}\nstderr:\n{self.err[-2000:]}"


class Source:
    """A source added with `sidecar source add` and the feed server it polls."""

    def __init__(self, name, alerts, *flags):
        self.name = name
        self.feed = feeds.AlertFeedServer(alerts)
        FEEDS.append(self.feed)
        interval = [] if "--interval" in flags else ["--interval", "3600"]  # the server never polls it again by itself
        # The feed servers listen on loopback: allowed, as an on-premises feed is.
        allowed = [] if "--allow-private" in flags else ["--allow-private", "true"]
        out = cli("source", "add", "--region", "1", "--url", self.feed.url, *interval, *allowed, *flags)
        found = re.match(r"source (\d+)\b", out.strip())
        check(found, f"source add printed {out!r}, not `source ID`")
        self.id = int(found.group(1))

    def entity(self, local):
        """Its alert's id in our feed."""
        return f"Source_{self.id}_{local}"

    def local(self, printed):
        return printed.removeprefix(f"Source_{self.id}_")

    def poll(self, ok=True, timeout=60):
        started = time.time()
        done = run("source", "poll", str(self.id), timeout=timeout)
        poll = Poll(self, done, time.time() - started)
        if ok:
            check(poll.code == 0, f"{self.name}: source poll failed: {poll}")
        return poll

    def show(self):
        """`source show ID` as {name: value} (the first of each name), the text under "text"."""
        out = cli("source", "show", str(self.id))
        shown = {"text": out}
        for line in out.splitlines():
            found = re.match(r"^\s*([a-z][a-z ]*?):\s?(.*)$", line)
            if found and found.group(1) not in shown:
                shown[found.group(1)] = found.group(2).strip()
        return shown

    def count(self, name):
        value = self.show().get(name, "")
        found = re.match(r"\d+", value)
        check(found, f"{self.name}: source show has no number for {name!r}: {value!r}")
        return int(found.group(0))

    def reviews(self):
        """[(entity as printed, entity as the source names it, reason)] of `source reviews ID`."""
        rows = []
        for line in cli("source", "reviews", str(self.id)).splitlines():
            # ENTITY, REASON and the header, tab-separated.
            printed, _, rest = line.strip().partition("\t")
            reason = rest.partition("\t")[0]
            if printed:
                rows.append((printed, self.local(printed), reason.strip()))
        return rows


def check_baseline(source, expected):
    """The first poll: every alert a `baseline` line, nothing pushed, reviewed or deferred."""
    poll = source.poll()
    baselined = poll.entities("baseline")
    check(baselined == set(expected), f"{source.name}: first poll baselined {sorted(baselined)}, expected {sorted(expected)}: {poll}")
    for verb in ("push", "review", "deferred"):
        check(not poll.entities(verb), f"{source.name}: the first poll has {verb} lines: {poll}")
    check(re.match(rf"^{len(expected)} alerts\b", poll.summary),
          f"{source.name}: summary {poll.summary!r}, expected `{len(expected)} alerts; ...`")
    shown = source.show()
    check(shown.get("status") == "ok", f"{source.name}: status after the first poll: {shown.get('status')!r}\n{shown['text']}")
    check(source.count("alerts") == len(expected),
          f"{source.name}: source show does not count {len(expected)} alerts:\n{shown['text']}")
    return poll


# MARK: Our feed and the gorush stand-in

def our_feed(sidecar):
    status, body = sidecar.request("GET", "/api/v1/regions/1/alerts")
    check(status == 200, f"our feed answered {status}")
    message = gtfs_realtime_pb2.FeedMessage()
    message.ParseFromString(body)
    return message, body


def feed_ids(sidecar):
    return {entity.id for entity in our_feed(sidecar)[0].entity}


def wait_for_feed(sidecar, condition, message, seconds=10):
    """Edits by the CLI reach the server's feed cache within a second."""
    base.wait_for(lambda: condition(feed_ids(sidecar)), seconds, message)


def alive(sidecar, doing):
    check(sidecar.process.poll() is None, f"the server exited after {doing}:\n{sidecar.text()[-3000:]}")
    status, _ = sidecar.request("GET", "/healthz")
    check(status == 200, f"/healthz answered {status} after {doing}")


class RecordingGorush(base.Gorush):
    """gorush that also records (token, title) of every notification."""

    def __init__(self):
        self.notifications = []
        super().__init__()
        self.RequestHandlerClass = RecordingGorushHandler

    def titles(self):
        with self.lock:
            return collections.Counter(self.notifications)


class RecordingGorushHandler(base.GorushHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests += 1
            for notification in body.get("notifications", []):
                for token in notification.get("tokens", []):
                    self.server.pushes[token] = self.server.pushes.get(token, 0) + 1
                    self.server.notifications.append((token, notification.get("title")))
        answer = json.dumps({"counts": len(body.get("notifications", [])), "logs": [], "success": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def settle(seconds=120):
    """Until no feed server has been asked anything for 1.5 s: a server just
    started may poll its sources once (answered 304), and a change made while
    it does would reach it instead of the CLI poll a part makes."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        before = [feed.requests for feed in FEEDS]
        time.sleep(1.5)
        if [feed.requests for feed in FEEDS] == before:
            return
    fail("the server kept polling sources whose interval is an hour")


# MARK: Alerts

def active_now():
    return [(NOW - HOUR, NOW + DAY)]


def severe(entity_id, en, es=None, effect="NO_SERVICE", entities=None, severity="SEVERE"):
    """An alert the default rules push: SEVERE, agency-wide, active now."""
    header = {"en": en, **({"es": es} if es else {})}
    return feeds.make_alert(entity_id, header=header, description={"en": f"{en}. Plan another trip."},
                            cause="TECHNICAL_PROBLEM", effect=effect, severity=severity, active=active_now(),
                            entities=entities if entities is not None else [{"agency_id": AGENCY}])


def mapping_alerts():
    return [
        feeds.make_alert(
            "m-full",
            header={"en": "Route 44 detoured", "es": "Ruta 44 desviada", "fr": "Ligne 44 déviée", "vi": "Tuyến 44 đi đường vòng"},
            description={"en": "Buses skip NW 45th St; use NW Market St.", "es": "Los autobuses no paran en NW 45th St.",
                         "fr": "Les bus ne desservent pas NW 45th St.", "vi": "Xe buýt không dừng ở NW 45th St."},
            url={"en": "https://agency.example/alerts/44", "es": "https://agency.example/es/alertas/44"},
            cause="CONSTRUCTION", effect="DETOUR", severity="SEVERE",
            active=[(NOW - HOUR, NOW + DAY), (NOW + 2 * DAY, None)],
            communication=[(NOW - 2 * HOUR, NOW + 3 * DAY)],
            impact=[(NOW, NOW + 6 * HOUR), (None, NOW + 2 * DAY + HOUR)],
            entities=[{"route_id": "44", "route_type": 3},
                      {"route_id": "44", "direction_id": 1},
                      {"trip": {"trip_id": "t-44-0800", "route_id": "44", "direction_id": 1, "start_time": "08:00:00",
                                "start_date": "20261201"}},
                      {"stop_id": "1_75403", "direction_id": 0}]),
        feeds.make_alert("m-agency", header={"en": "Fares are free today", "es": "Hoy no se cobra el pasaje"},
                         cause="HOLIDAY", effect="OTHER_EFFECT", severity="INFO", active=[(NOW - 60, NOW + DAY)],
                         entities=[{"agency_id": AGENCY}]),
        feeds.make_alert("m-other", header={"en": "Ferry cancelled", "es": "Ferry cancelado"}, cause="WEATHER",
                         effect="NO_SERVICE", severity="WARNING", active=[(NOW - 60, NOW + DAY)],
                         entities=[{"agency_id": "KCM", "route_type": 4}, {"route_type": 4}]),
        # What many feeds send: one text without a language, no period (always active), no selector.
        feeds.make_alert("m-plain", header="Elevator out of service at Westlake"),
    ]


# MARK: Comparing what we re-emit with what the source served

def texts(translated):
    return {translation.language: translation.text for translation in translated.translation}


def selector(value):
    fields = {}
    for field, content in value.ListFields():
        fields[field.name] = {f.name: v for f, v in content.ListFields()} if field.name == "trip" else content
    return json.dumps(fields, sort_keys=True)


# The translation catalog's languages (`--locales`, the default) as a phone's
# tag normalises into them; written here from the documented rule (docs/alert-sources.md), not the code.
CATALOG = ["es", "zh-Hans", "zh-Hant", "vi", "ko", "tl", "ru", "ja", "pt", "fr", "de", "ar", "so", "am", "ti", "uk", "hi", "pa",
           "ht", "km", "fa", "pl", "it"]


def normalised(tag):
    """A source's language tag as our feed names it: none or English is en,
    Chinese by script or region, else the catalog's language or the bare code."""
    if not tag:
        return "en"
    parts = tag.replace("_", "-").lower().split("-")
    language = parts[0]
    if language == "en":
        return "en"
    if language == "zh":
        traditional = "hant" in parts[1:] or any(p in ("tw", "hk", "mo") for p in parts[1:]) and "hans" not in parts[1:]
        return "zh-Hant" if traditional else "zh-Hans"
    language = {"fil": "tl", "iw": "he", "in": "id", "ji": "yi"}.get(language, language)
    return next((known for known in CATALOG if known.lower() == language), language)


def compare(source_entity, ours, source_periods, our_periods):
    """Differences between a source's alert and ours, as sentences: the
    mapping's rules (docs/alert-sources.md), each checked on the decoded feed."""
    theirs, mine, problems = source_entity.alert, ours.alert, []
    for name in ("header_text", "description_text", "url"):
        source_texts, our_texts = getattr(theirs, name).translation, texts(getattr(mine, name))
        if not source_texts:
            continue
        english = next((t.text for t in source_texts if normalised(t.language) == "en"), None)
        if our_texts.get("en") != (english or source_texts[0].text):
            problems.append(f"{name}: en is {our_texts.get('en')!r}, the source's English or first text is {english!r}")
        if list(texts(getattr(mine, name)))[:1] != ["en"]:
            problems.append(f"{name}: en is not first: {list(our_texts)}")
        for translation in source_texts:
            language = normalised(translation.language)
            if language != "en" and our_texts.get(language) != translation.text:
                problems.append(f"{name}: {translation.language or '(untagged)'} should go out as {language}: ours {our_texts}")
    for name in ("cause", "effect", "severity_level"):
        if getattr(theirs, name) != getattr(mine, name):
            problems.append(f"{name}: source {getattr(theirs, name)}, ours {getattr(mine, name)}")
    expected = []
    for original in theirs.informed_entity:
        scoped = gtfs_realtime_pb2.EntitySelector()
        scoped.CopyFrom(original)
        if not scoped.HasField("agency_id"):
            scoped.agency_id = AGENCY  # in the same selector: a route stays a route
        expected.append(selector(scoped))
    if not expected:
        expected = [selector(gtfs_realtime_pb2.EntitySelector(agency_id=AGENCY))]
    got = [selector(s) for s in mine.informed_entity]
    if sorted(expected) != sorted(got):
        problems.append(f"informed_entity: expected {sorted(expected)}, ours {sorted(got)}")
    for number, name in ((2, "communication_period"), (3, "impact_period")):
        if sorted(source_periods[number], key=str) != sorted(our_periods[number], key=str):
            problems.append(f"{name}: source {source_periods[number]}, ours {our_periods[number]}")
    filled = source_periods[1] or source_periods[2] or source_periods[3]
    if filled and sorted(filled, key=str) != sorted(our_periods[1], key=str):
        problems.append(f"active_period: source {source_periods[1]}, filled from {filled}; ours {our_periods[1]}")
    if not filled and (len(our_periods[1]) != 1 or our_periods[1][0][0] is None or our_periods[1][0][1] is not None):
        problems.append(f"active_period: a source without periods should be open-ended from first seen; ours {our_periods[1]}")
    return problems


def all_texts(message):
    for entity in message.entity:
        for name in ("header_text", "description_text", "url"):
            for translation in getattr(entity.alert, name).translation:
                yield entity.id, translation.text


def naming_line(lines, entity, pattern):
    """The first line that names `entity` and says what is wrong with it (the
    id itself taken out first: `i-notext` must not count as saying "text")."""
    for line in lines:
        if entity in line and re.search(pattern, line.replace(entity, ""), re.I):
            return line.strip()
    return None


# MARK: Parts

def setup():
    """Before the server runs: the region, an authored alert, three devices,
    and every source's first (baseline) poll, so no poll of the server's
    races the CLI's."""
    cli("migrate")
    cli("region", "set", "--id", "1", "--agency-id", AGENCY, "--timezone", "UTC")
    created = cli("alert", "create", "--region", "1", "--header", "Pine St elevator closed", "--start", iso(NOW - HOUR))
    authored = created.split()[2]
    cli("alert", "publish", authored)
    connection = sqlite3.connect(DB)
    now = int(time.time() * 1000)
    connection.executemany(
        """INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device,
           created_at, last_seen_at) VALUES (1, ?, ?, ?, ?, 0, ?, ?, ?)""",
        [(DEVICES["en"], "ios", None, "en-US", 0, now, now), (DEVICES["es"], "android", "es", "es-US", 0, now, now),
         (DEVICES["test"], "ios", None, "en-US", 1, now, now)])
    connection.commit()
    connection.close()

    utc = time.gmtime(NOW)
    minutes = utc.tm_hour * 60 + utc.tm_min
    quiet = f"{clock(minutes - 120)}-{clock(minutes + 120)}"  # two hours either side of now (it may wrap)
    sources = {
        "mapping": Source("mapping", mapping_alerts(), "--push", "off"),
        "push-only": Source("push-only", [severe("p-1", "Push-only alert")], "--mode", "push-only", "--push", "off"),
        "rules": Source("rules", [severe("r-base", "Already there")], "--push", "auto",
                        "--effects", "NO_SERVICE,REDUCED_SERVICE,DETOUR"),
        "review": Source("review", [severe("v-base", "Already there too")], "--push", "review"),
        "quiet": Source("quiet", [severe("q-base", "Quiet base")], "--push", "auto", "--quiet-hours", quiet),
        "flood": Source("flood", [severe("f-base", "Flood base")], "--push", "auto", "--flood-threshold", "20"),
        "input": Source("input", [severe("i-good", "Good alert stays")], "--push", "auto"),
        "upstream": Source("upstream", [severe("b-1", "Kept one"), severe("b-2", "Kept two")], "--push", "off"),
    }
    for source in sources.values():
        check_baseline(source, [entity.id for entity in source.feed.entities])
    listed = cli("source", "list", "--region", "1")
    for source in sources.values():
        check(re.search(rf"^{source.id}\b", listed, re.M), f"source list does not list source {source.id}:\n{listed}")
    print(f"baseline: {len(sources)} sources' first polls printed a `baseline` line per alert "
          f"({sum(len(s.feed.entities) for s in sources.values())} alerts) and pushed, reviewed and deferred none")

    mapping = sources["mapping"]
    poll = mapping.poll()
    check(poll.lines[:1] == ["not modified"], f"unchanged content: {poll}")
    check(mapping.feed.not_modified == 1, f"the feed server answered {mapping.feed.not_modified} 304s, not 1")
    check(mapping.feed.header_values("If-None-Match")[-1:] == [mapping.feed.etag],
          f"If-None-Match sent: {mapping.feed.header_values('If-None-Match')}, the ETag is {mapping.feed.etag}")
    shown = mapping.show()
    check(shown.get("status") == "not modified", f"status after a 304: {shown.get('status')!r}")
    check(mapping.count("not modified") == 1, f"source show does not count the 304:\n{shown['text']}")
    check(mapping.feed.etag.strip('"') in shown.get("etag", ""), f"source show's etag {shown.get('etag')!r}")
    asked_gzip = any("gzip" in value for value in mapping.feed.header_values("Accept-Encoding"))
    print(f"conditional: the second poll sent If-None-Match {mapping.feed.etag}, was answered 304 and printed `not modified`; "
          f"source show: `status: not modified`, `not modified: 1` (gzip {'asked' if asked_gzip else 'not asked'})")
    return sources, authored


def mapping(sidecar, sources, authored):
    source, push_only = sources["mapping"], sources["push-only"]
    wanted = {source.entity(entity.id) for entity in source.feed.entities}
    wait_for_feed(sidecar, lambda ids: wanted <= ids, f"our feed lacks {sorted(wanted)}")
    message, body = our_feed(sidecar)
    ours = {entity.id: entity for entity in message.entity}
    our_periods = feeds.raw_periods(body)
    source_periods = feeds.raw_periods(source.feed.body)
    languages = set()
    for entity in source.feed.entities:
        mirrored = ours.get(source.entity(entity.id))
        problems = compare(entity, mirrored, source_periods[entity.id], our_periods[source.entity(entity.id)])
        check(not problems, f"{source.entity(entity.id)} differs from the source's {entity.id}:\n  " + "\n  ".join(problems))
        languages |= set(texts(entity.alert.header_text))
    check(f"Alert_{authored}" in ours, f"the authored alert Alert_{authored} left the feed: {sorted(ours)}")
    leaked = [entity_id for entity_id in ours if entity_id.startswith(f"Source_{push_only.id}_")]
    check(not leaked, f"a push-only source's alerts are in the feed: {leaked}")
    foreign = [entity_id for entity_id in ours if not re.match(r"^(Alert_\d+|Source_\d+_.+)$", entity_id)]
    check(not foreign, f"entity ids of neither form: {foreign}")
    print(f"mapping: {len(wanted)} alerts re-emitted as Source_{source.id}_ENTITY with every translation "
          f"({len(languages - {''})} languages and one unlabelled, each under the code the apps match, en first), cause, effect, "
          f"severity, url, the three kinds of period (active_period filled where the source gave none) and informed entities "
          f"(trip, route_type, direction_id), each naming the region's agency where it named none; "
          f"Alert_{authored} kept; push-only alerts left out")


def rules(sources):
    """Auto pushes: what passes the rules starts one send (`push` line), the rest is only `added`."""
    source = sources["rules"]
    pushed = [severe("r-severe", "Bridge closed", "Puente cerrado"),
              severe("r-route", "Route 7 not serving 3rd Ave", "Ruta 7 no pasa por 3rd Ave", effect="DETOUR",
                     entities=[{"route_id": "7"}])]
    quiet = [severe("r-info", "Info only", severity="INFO"),
             severe("r-effect", "Elevator out", effect="ACCESSIBILITY_ISSUE"),
             severe("r-stop", "Stop closed", entities=[{"stop_id": "1_75403"}]),
             severe("r-trip", "Trip cancelled", entities=[{"trip": {"trip_id": "t-7-0900", "route_id": "7"}}])]
    source.feed.set_alerts(source.feed.entities + pushed + quiet)
    poll = source.poll()
    for entity in ("r-severe", "r-route"):
        rest = poll.rest("push", entity)
        check(rest is not None and re.match(r"send \d+ to all( is queued; the running server starts it within \d+ s .*)?$", rest), f"no `push {entity}: send N to all`: {poll}")
    for entity, why in (("r-info", "INFO is below WARNING"), ("r-effect", "ACCESSIBILITY_ISSUE is not in --effects"),
                        ("r-stop", "a stop-scoped alert is narrower than --scope route"),
                        ("r-trip", "a trip-scoped alert is narrower than --scope route")):
        verbs = poll.verbs(entity)
        check("added" in verbs and not {"push", "review", "deferred"} & set(verbs), f"{entity} ({why}): {verbs}: {poll}")
    print("rules: auto: a new SEVERE agency-wide and a route-wide alert printed `push ENTITY: send N to all`; "
          "INFO, an effect outside --effects, stop- and trip-scoped alerts only `added`")
    return [("r-severe", "Bridge closed", "Puente cerrado"), ("r-route", "Route 7 not serving 3rd Ave", "Ruta 7 no pasa por 3rd Ave")]


def review(sources):
    source = sources["review"]
    source.feed.set_alerts(source.feed.entities + [severe("v-approve", "Tunnel closed", "Túnel cerrado"),
                                                   severe("v-dismiss", "Dismiss me")])
    poll = source.poll()
    check(poll.entities("review") >= {"v-approve", "v-dismiss"} and not poll.entities("push"),
          f"review mode: expected `review ENTITY: REASON` lines and no push: {poll}")
    rows = {local: (printed, reason) for printed, local, reason in source.reviews()}
    check({"v-approve", "v-dismiss"} <= set(rows), f"source reviews lists {sorted(rows)}")
    approved = run("source", "approve", str(source.id), "--entity", rows["v-approve"][0])
    check(approved.returncode == 0 and re.search(r"^push (Source_\d+_)?v-approve: send \d+ to all( is queued; .*)?$", approved.stdout, re.M),
          f"approve: exit {approved.returncode}, {approved.stdout!r} {approved.stderr!r}")
    again = run("source", "approve", str(source.id), "--entity", rows["v-approve"][0])
    check(again.returncode != 0 or not re.search(r"^push ", again.stdout, re.M),
          f"a second approve started another push: {again.stdout!r}")
    refusal = (again.stderr.strip() or again.stdout.strip()).splitlines()[-1:] or ["(nothing printed)"]
    cli("source", "dismiss", str(source.id), "--entity", rows["v-dismiss"][0])
    left = {local for _, local, _ in source.reviews()}
    check(not {"v-approve", "v-dismiss"} & left, f"reviews after approve and dismiss: {sorted(left)}")
    print(f"review: both new alerts waited in `source reviews`; approve printed `push v-approve: send N to all`, "
          f"a second approve was refused (exit {again.returncode}: {refusal[0][:80]}); dismiss dropped the other")
    return [("v-approve", "Tunnel closed", "Túnel cerrado")]


def quiet_hours(sources):
    source = sources["quiet"]
    source.feed.set_alerts(source.feed.entities + [severe("q-new", "Deferred by quiet hours")])
    poll = source.poll()
    rest = poll.rest("deferred", "q-new")
    check(rest is not None and rest.startswith("until "), f"quiet hours: no `deferred q-new until TIME`: {poll}")
    check(not poll.entities("push"), f"quiet hours: pushed at once: {poll}")
    print(f"quiet hours: a SEVERE alert inside them printed `deferred q-new {rest}` and no push")


def flood(sources):
    source = sources["flood"]
    many = [severe(f"f-{n}", f"Flood alert {n}") for n in range(25)]
    source.feed.set_alerts(source.feed.entities + many)
    poll = source.poll()
    check(not poll.entities("push"), f"a flood pushed: {poll}")
    wanted = {f"f-{n}" for n in range(25)}
    check(poll.entities("review") >= wanted, f"a flood: not every alert printed `review`: {poll}")
    rows = [(local, reason) for _, local, reason in source.reviews() if local in wanted]
    check(len(rows) == 25, f"source reviews lists {len(rows)} of the 25")
    unnamed = [local for local, reason in rows if "flood" not in reason.lower()]
    check(not unnamed, f"review reasons that do not name the flood: {[(l, r) for l, r in rows if l in unnamed][:3]}")
    status = source.show().get("status")
    check(status == "held", f"status after a flood: {status!r}, expected held")
    print(f"flood: 25 new alerts at threshold 20 pushed none; all 25 in `source reviews` ({rows[0][1][:70]}); status held")


def bad_input(sidecar, sources):
    source = sources["input"]
    good = source.feed.entities[0]
    marker = "@@INVALID-UTF8-HEADER@@"
    year = feeds.year_seconds(30000)
    cases = [
        ("duplicate entity ids", "i-dup", lambda: source.feed.set_alerts(
            [good, severe("i-dup", "Duplicate first"), severe("i-dup", "Duplicate second")]), r"duplicate"),
        ("an alert without any text", "i-notext", lambda: source.feed.set_alerts(
            [good, feeds.make_alert("i-notext", cause="STRIKE", effect="NO_SERVICE", severity="SEVERE", active=active_now(),
                                    entities=[{"agency_id": AGENCY}])]), r"text|header"),
        ("10,000 informed entities", "i-many", lambda: source.feed.set_alerts(
            [good, severe("i-many", "Many stops", entities=[{"stop_id": f"s{n}"} for n in range(10_000)])]),
         r"informed|selector|entit"),
        ("a 1 MB header", "i-big", lambda: source.feed.set_alerts([good, severe("i-big", "Detour " * 150_000)]),
         r"long|large|size|bytes|characters|limit"),
        ("invalid UTF-8 in a header", "i-utf8", lambda: source.feed.set_body(
            feeds.feed_with_invalid_utf8([good, feeds.make_alert(
                "i-utf8", header={"en": marker}, description={"en": "Service suspended."}, cause="STRIKE", effect="NO_SERVICE",
                severity="SEVERE", active=active_now(), entities=[{"agency_id": AGENCY}])], marker)), r"utf-?8|encoding"),
        ("periods in the year 30000", "i-year", lambda: source.feed.set_alerts(
            [good, feeds.make_alert("i-year", header={"en": "Far future"}, cause="STRIKE", effect="NO_SERVICE",
                                    severity="SEVERE", active=[(year, year + HOUR)], impact=[(year, year + 60)],
                                    entities=[{"agency_id": AGENCY}])]), r"period|year|range|time|30000|future"),
    ]
    named = []
    for description, entity, serve, pattern in cases:
        serve()
        poll = source.poll(ok=False, timeout=90)
        alive(sidecar, description)
        check(poll.code in (0, 1), f"{description}: source poll exited {poll.code}: {poll}")
        shown = source.show()
        lines = poll.out.splitlines() + poll.err.splitlines() + shown["text"].splitlines()
        # A feed of 1 MB may be refused whole by the source's body limit: that names the problem too.
        too_large = entity == "i-big" and poll.code == 1 and re.search(r"larger|too large|limit|bytes", poll.err, re.I)
        line = naming_line(lines, entity, pattern)
        check(line or too_large,
              f"{description}: no line names {entity} and matches /{pattern}/ (poll output, stderr, source show):\n"
              + "\n".join(lines)[-3000:])
        if entity != "i-dup":  # one of two duplicates may be pushed; it is counted at the end
            check("push" not in poll.verbs(entity), f"{description}: pushed: {poll}")
        wait_for_feed(sidecar, lambda ids: source.entity("i-good") in ids, f"{description}: the good alert left our feed")
        message, _ = our_feed(sidecar)
        for entity_id, text in all_texts(message):
            check(isinstance(text, str), f"{description}: {entity_id} has a text that is not UTF-8 in our feed: {text[:60]!r}")
            check("\ufffd" not in text, f"{description}: {entity_id} has a replacement character in our feed: {text[:60]!r}")
            check(len(text) <= 100_000, f"{description}: {entity_id} carries a {len(text)}-character text into our feed")
        named.append((line or poll.err.strip().splitlines()[-1])[:90])
    source.feed.set_alerts([good])
    source.poll()
    alive(sidecar, "the bad input")
    print(f"bad input: {len(cases)} feeds (duplicate ids, no text, 10,000 informed entities, a 1 MB header, invalid UTF-8, "
          f"the year 30000): server up, none pushed, each named, e.g. {named[4]!r}; the good alert stayed")


def upstreams(sidecar, sources):
    source = sources["upstream"]
    kept = {source.entity("b-1"), source.entity("b-2")}
    cases = [("hang", "hang"), ("500", "500"), ("html", "html"), ("huge", "huge"), ("truncated", "truncated"),
             ("short_read", "cut short"), ("garbage", "garbage")]
    if any("gzip" in value for value in source.feed.header_values("Accept-Encoding")):
        cases.append(("huge", "20 MB gzip bomb"))
    reasons = {}
    hang_seconds = None
    for mode, name in cases:
        # The huge body goes uncompressed first, then (if the sidecar asks for
        # gzip) as 20 KB that inflate to 20 MB.
        source.feed.gzip = name == "20 MB gzip bomb"
        source.feed.mode = mode
        poll = source.poll(ok=False, timeout=60)
        source.feed.mode = "ok"  # releases a hanging request
        check(poll.code == 1 and "failed:" in poll.err, f"{name}: expected `failed: REASON` and exit 1: {poll}")
        reasons[name] = poll.err.split("failed:", 1)[1].strip().splitlines()[0][:80]
        if mode == "hang":
            hang_seconds = poll.elapsed
            # The poll's own deadline (60 s) catches a hang; the event is the
            # timeout named in the failure, whatever the machine's load.
            check(re.search(r"time", poll.err, re.I), f"hang: the failure does not say it timed out: {poll.err!r}")
        if mode == "huge":
            check(re.search(r"larger|too large|size|limit|bytes", poll.err, re.I),
                  f"{name}: the failure does not name the size: {poll.err!r}")
        shown = source.show()
        check(shown.get("status") == "failing", f"{name}: status {shown.get('status')!r}, expected failing")
        check(shown.get("last error", "-") not in ("", "-", "none"), f"{name}: no last error:\n{shown['text']}")
        check(source.count("failures") >= 1, f"{name}: no failures counted")
        wait_for_feed(sidecar, lambda ids: kept <= ids, f"{name}: the last good alerts left our feed", seconds=5)
        alive(sidecar, name)
    source.feed.gzip = True
    poll = source.poll()
    status = source.show().get("status")
    check(status in ("ok", "not modified"), f"after the upstream recovered: status {status!r}")
    print(f"upstreams: {len(cases)} failures, each `failed:` with exit 1 (hang after {hang_seconds:.1f} s; "
          + "; ".join(f"{name}: {reason}" for name, reason in list(reasons.items())[:3])
          + f"); status failing with its last error; both good alerts stayed in our feed; /healthz 200; recovered: {status}")


def refused(sidecar):
    refusals = []
    for url in ("http://169.254.169.254/latest/meta-data", "http://[fe80::1]/feed", "http://metadata.google.internal/"):
        done = run("source", "add", "--region", "1", "--url", url)
        check(done.returncode != 0, f"source add accepted {url}: {done.stdout!r}")
        check(re.search(r"refus|not allowed|link-local|metadata|forbidden", done.stderr, re.I) and
              not re.search(r"unknown (option|flag)", done.stderr, re.I), f"source add {url}: unclear refusal {done.stderr!r}")
        refusals.append(next(line for line in done.stderr.splitlines()
                             if re.search(r"refus|not allowed|link-local|metadata|forbidden", line, re.I)).strip()[:70])
    # A URL at this server's own listener is refused before connecting, and
    # on the connected socket (AlertSourceRulesTests, AlertSourcePollTests).
    print(f"refused: 169.254.169.254, fe80::1 and metadata.google.internal by source add ({refusals[0]})")


def header_file(sidecar):
    key = "sk-live-" + secrets.token_hex(16)
    path = os.path.join(WORK, "agency-api-key")
    with open(path, "w") as file:
        file.write(key + "\n")  # as editors and secret stores write files: the newline is not part of the key
    os.chmod(path, 0o600)
    source = Source("header-file", [severe("h-1", "Keyed feed alert")], "--push", "off", "--header-file", f"X-Api-Key:{path}")
    # Added while the server runs: it polls a new source at once.
    base.wait_for(lambda: source.feed.requests >= 1, 20, "the server did not poll a new source within 20 s")
    base.wait_for(lambda: source.show().get("status") not in (None, "never polled"), 10, "the server's first poll was not recorded")
    source.poll()
    values = source.feed.header_values("X-Api-Key")
    check(values and all(value == key for value in values), f"X-Api-Key received: {values}, expected the file's key")
    shown = cli("source", "show", str(source.id)) + cli("source", "list")
    check(key not in shown, f"the key is printed by source show or list:\n{shown}")
    check(key not in sidecar.text(), "the key is in the server's log")
    stored = b"".join(open(DB + suffix, "rb").read() for suffix in ("", "-wal") if os.path.exists(DB + suffix))
    check(key.encode() not in stored, "the key is stored in the database")
    print("secrets: --header-file X-Api-Key:FILE reached the feed server on the server's first poll (within "
          "seconds of source add) and the CLI's; the key is in no output, log or database page")


def metrics(sidecar):
    text = sidecar.text()
    check("metrics listening" in text, f"no metrics listener:\n{text[-2000:]}")
    port = int(text.split("metrics listening", 1)[1].split("/metrics", 1)[0].rsplit(":", 1)[1])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as response:
        exposition = response.read().decode()
    for name in ("sidecar_source_polls_total", "sidecar_source_alerts", "sidecar_source_pushes_total"):
        check(re.search(rf"^{name}(\{{| )", exposition, re.M), f"{name} is not exposed")
    ok = re.search(r'^sidecar_source_polls_total\{[^}]*outcome="ok"[^}]*\} (\S+)', exposition, re.M)
    check(ok and float(ok.group(1)) >= 1, "the server's own polls are not counted as sidecar_source_polls_total{outcome=\"ok\"}")
    print(f"metrics: sidecar_source_polls_total (ok {float(ok.group(1)):.0f} by this server), sidecar_source_alerts, "
          "sidecar_source_pushes_total exposed")


def wait_for_pushes(gorush, expected):
    wanted = {(DEVICES["en"], en) for _, en, _ in expected} | {(DEVICES["es"], es) for _, _, es in expected}
    base.wait_for(lambda: wanted <= set(gorush.titles()), 45,
                  f"pushes missing after 45 s: {sorted(wanted - set(gorush.titles()))}; received {sorted(gorush.titles())}")
    return wanted


def once(sources, restart, gorush, expected):
    """A correction, a re-poll and a restart push nothing again; then the tally."""
    source = sources["rules"]
    corrected = []
    for entity in source.feed.entities:
        if entity.id == "r-severe":
            entity = severe("r-severe", "Bridge closed until 6 pm", "Puente cerrado hasta las 18 h")
        corrected.append(entity)
    source.feed.set_alerts(corrected)
    poll = source.poll()
    check("changed" in poll.verbs("r-severe") and "push" not in poll.verbs("r-severe"),
          f"an immediate correction: expected `changed r-severe` and no push: {poll}")
    source.feed.set_alerts(corrected)  # the same content under a new ETag: a full answer, nothing new in it
    poll = source.poll()
    check(not poll.changes, f"a re-poll of identical content printed changes: {poll}")
    sidecar = restart()
    # Twice --send-lease-seconds: a send the restarted server found to resume
    # (or a push it thought it still owed) would have gone out by then.
    time.sleep(10)
    alive(sidecar, "the restart")
    tally = gorush.titles()
    twice = {key: count for key, count in tally.items() if count > 1}
    check(not twice, f"pushed more than once: {twice}")
    allowed = {title for _, en, es in expected for title in (en, es)} | {"Duplicate first", "Duplicate second"}
    stray = sorted({title for _, title in tally if title not in allowed})
    check(not stray, f"pushed but should not have been: {stray}")
    duplicates = {title for _, title in tally if title.startswith("Duplicate ")}
    check(len(duplicates) <= 1, f"both alerts of a duplicated id were pushed: {duplicates}")
    print(f"once: an immediate correction printed `changed` and no push; a re-poll of the same content under a new ETag "
          f"printed nothing; after a restart and 10 s, {sum(tally.values())} notifications in all, none twice, none of the "
          f"alerts the rules hold back")
    return sidecar


def remove(sidecar, source):
    """`source remove ID`: the source's alerts leave our feed with it."""
    cli("source", "remove", str(source.id))
    prefix = f"Source_{source.id}_"
    wait_for_feed(sidecar, lambda ids: not any(entity_id.startswith(prefix) for entity_id in ids),
                  f"the alerts of removed source {source.id} stayed in our feed")


def main():
    gorush = None
    state = {}
    try:
        sources, authored = setup()
        gorush = RecordingGorush()
        arguments = ["--gorush-url", gorush.url, "--send-lease-seconds", "5", "--metrics-listen", "127.0.0.1:0"]
        state["sidecar"] = base.Sidecar(DB, *arguments)
        settle()
        sidecar = state["sidecar"]
        mapping(sidecar, sources, authored)
        # The feed shows at most 20 alerts (spec §3), newest first: sources
        # whose part is over are removed (with their alerts), so the alerts
        # later parts look for are never crowded out.
        remove(sidecar, sources.pop("mapping"))
        expected = rules(sources) + review(sources)
        quiet_hours(sources)
        flood(sources)
        remove(sidecar, sources.pop("flood"))
        bad_input(sidecar, sources)
        upstreams(sidecar, sources)
        refused(sidecar)
        header_file(sidecar)
        metrics(sidecar)
        wanted = wait_for_pushes(gorush, expected)
        print(f"pushes: {len(wanted)} notifications for the 3 pushed alerts, each in the device's language "
              f"(e.g. {DEVICES['es']}: {expected[0][2]!r})")

        def restart():
            check(state["sidecar"].stop() == 0, "the server did not stop cleanly")
            state["sidecar"] = base.Sidecar(DB, *arguments, "--port", str(sidecar.port))
            return state["sidecar"]

        once(sources, restart, gorush, expected)
    finally:
        if "sidecar" in state and state["sidecar"].process.poll() is None:
            state["sidecar"].stop()
        for feed in FEEDS:
            feed.close()
        if gorush:
            gorush.shutdown()
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
