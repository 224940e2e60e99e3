#!/usr/bin/env python3
"""A GTFS-realtime Alerts feed an agency might publish, served on loopback,
for the alert-source checks (Tests/Peers/sources.py) and the benchmark
(bench/sources.sh). Built with Google's gtfs-realtime-bindings, so what the
sidecar mirrors was written by a protobuf implementation nobody on the team
wrote.

As a module:

    feed = AlertFeedServer([make_alert("a1", header={"en": "Bridge closed"})])
    feed.url                  # http://127.0.0.1:PORT/gtfs-rt/alerts.pb
    feed.set_alerts([...])    # new content: a new ETag and a later Last-Modified
    feed.mode = "500"         # ok hang 500 html huge truncated short_read garbage duplicate_ids
    feed.requests, feed.not_modified, feed.header_values("X-Api-Key")

Standalone (the benchmark), printing the feed's URL on the first line:

    alert_feed_server.py --alerts 1000 --translations 40 --port 18601

and, for a shell to drive it: POST /control/change-all (every alert's text
changes), POST /control/add?id=ID (a new SEVERE agency-wide alert),
POST /control/mode?mode=M, GET /control/stats (JSON counts).
"""
import argparse
import email.utils
import gzip
import json
import random
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.transit import gtfs_realtime_pb2

Alert = gtfs_realtime_pb2.Alert
MODES = ("ok", "hang", "500", "html", "huge", "truncated", "short_read", "garbage", "duplicate_ids")
HUGE_BYTES = 20 * 1024 * 1024
FEED_PATH = "/gtfs-rt/alerts.pb"


# MARK: Wire format by hand
#
# communication_period (2) and impact_period (3) are newer than some
# published bindings: when the installed ones lack them they are written
# (and read back, in the checks) from the raw wire format.

def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def time_range_bytes(start, end):
    payload = b""
    if start is not None:
        payload += varint(1 << 3) + varint(start)
    if end is not None:
        payload += varint(2 << 3) + varint(end)
    return payload


def fields(data):
    """(field number, wire type, value) of one protobuf message, read by hand."""
    index = 0

    def read_varint():
        nonlocal index
        shift = result = 0
        while True:
            byte = data[index]
            index += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7

    while index < len(data):
        key = read_varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, read_varint()
        elif wire == 2:
            length = read_varint()
            yield number, wire, bytes(data[index:index + length])
            index += length
        elif wire == 1:
            yield number, wire, bytes(data[index:index + 8])
            index += 8
        elif wire == 5:
            yield number, wire, bytes(data[index:index + 4])
            index += 4
        else:
            raise ValueError(f"wire type {wire}")


def raw_periods(feed_bytes):
    """{entity id: {1: [(start, end)], 2: [...], 3: [...]}} of every alert of a
    serialized FeedMessage, None where a bound is absent."""
    result = {}
    for number, _, entity in fields(feed_bytes):
        if number != 2:
            continue
        members = list(fields(entity))
        entity_id = next((value.decode("utf-8", "replace") for n, _, value in members if n == 1), None)
        alert = next((value for n, _, value in members if n == 5), None)
        if entity_id is None or alert is None:
            continue
        periods = {1: [], 2: [], 3: []}
        for n, wire, value in fields(alert):
            if n in periods and wire == 2:
                bounds = {k: v for k, _, v in fields(value)}
                periods[n].append((bounds.get(1), bounds.get(2)))
        result[entity_id] = periods
    return result


# MARK: Building alerts

def _enum(enum_type, value):
    return enum_type.Value(value) if isinstance(value, str) else value


def _translated(target, texts):
    """texts: a str (one translation without a language, as many feeds send)
    or {language: text} (a None or "" language: no language field)."""
    if isinstance(texts, str):
        texts = {None: texts}
    for language, text in texts.items():
        translation = target.translation.add()
        translation.text = text
        if language:
            translation.language = language


def _selector(target, fields_):
    for key, value in fields_.items():
        if key == "trip":
            for trip_key, trip_value in value.items():
                setattr(target.trip, trip_key, trip_value)
        else:
            setattr(target, key, value)


def _has_field(message_type, name):
    return name in message_type.DESCRIPTOR.fields_by_name


def make_alert(entity_id, header=None, description=None, url=None, cause=None, effect=None, severity=None,
               active=(), communication=(), impact=(), entities=()):
    """A FeedEntity holding one Alert. Texts as `_translated` takes them;
    cause/effect/severity by GTFS-realtime name or number; periods as
    [(start, end)] in epoch seconds (None: unbounded); entities as
    EntitySelector fields, a trip as a dict of TripDescriptor fields:
    [{"agency_id": "1"}, {"route_id": "44", "route_type": 3},
     {"trip": {"trip_id": "t1", "direction_id": 1, "start_date": "20261201"}}, {"stop_id": "s1"}]."""
    entity = gtfs_realtime_pb2.FeedEntity()
    entity.id = entity_id
    alert = entity.alert
    if header is not None:
        _translated(alert.header_text, header)
    if description is not None:
        _translated(alert.description_text, description)
    if url is not None:
        _translated(alert.url, url)
    if cause is not None:
        alert.cause = _enum(Alert.Cause, cause)
    if effect is not None:
        alert.effect = _enum(Alert.Effect, effect)
    if severity is not None:
        alert.severity_level = _enum(Alert.SeverityLevel, severity)
    raw = b""
    for name, number, periods in (("active_period", 1, active), ("communication_period", 2, communication),
                                  ("impact_period", 3, impact)):
        for start, end in periods:
            if _has_field(Alert, name):
                period = getattr(alert, name).add()
                if start is not None:
                    period.start = start
                if end is not None:
                    period.end = end
            else:
                raw += length_delimited(number, time_range_bytes(start, end))
    if raw:
        # Unknown to these bindings: kept as unknown fields and written out.
        alert.MergeFromString(raw)
    for fields_ in entities:
        _selector(alert.informed_entity.add(), fields_)
    return entity


def alert_from_dict(spec):
    """make_alert from a dict of its keyword arguments plus "id"."""
    spec = dict(spec)
    return make_alert(spec.pop("id"), **spec)


def feed_message(entities, timestamp=None):
    message = gtfs_realtime_pb2.FeedMessage()
    message.header.gtfs_realtime_version = "2.0"
    message.header.incrementality = gtfs_realtime_pb2.FeedHeader.FULL_DATASET
    message.header.timestamp = int(timestamp if timestamp is not None else time.time())
    for entity in entities:
        message.entity.add().CopyFrom(entity)
    return message


def feed_with_invalid_utf8(entities, marker):
    """The serialized feed with `marker` (an ASCII text somewhere in it, say a
    header) overwritten by bytes that are not UTF-8, its length unchanged so
    the framing stays sound: a protobuf library refuses to write such a
    string, so it is patched in afterwards."""
    body = feed_message(entities).SerializeToString()
    marker = marker.encode()
    bad = (b"Bad \xff\xfe \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80" + b"!" * len(marker))[:len(marker)]
    occurrences = body.count(marker)
    if occurrences != 1:
        raise ValueError(f"the marker occurs {occurrences} times in the feed, not once")
    return body.replace(marker, bad)


def year_seconds(year):
    """Epoch seconds of 1 January of `year` (UTC), past datetime's 9999."""
    days = 0
    for y in range(1970, year):
        days += 366 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 365
    return days * 86400


LANGUAGES = ["en", "es", "fr", "de", "it", "pt", "nl", "sv", "da", "nb", "fi", "pl", "cs", "sk", "hu", "ro", "bg", "el",
             "tr", "ru", "uk", "ar", "he", "fa", "hi", "bn", "ta", "te", "ur", "th", "vi", "id", "ms", "tl", "zh-Hans",
             "zh-Hant", "ja", "ko", "am", "so"]


def big_feed_alerts(count=1000, translations=40, generation=0, agency_id="1", now=None):
    """`count` alerts, each with a header and description in `translations`
    languages (the first 40 tags of LANGUAGES, then made-up ones), route-scoped
    WARNING detours. A new `generation` changes every alert's text."""
    now = int(now if now is not None else time.time())
    languages = [LANGUAGES[n] if n < len(LANGUAGES) else f"x-lang{n}" for n in range(translations)]
    alerts = []
    for number in range(count):
        route = f"r{number % 300}"
        alerts.append(make_alert(
            f"big-{number}",
            header={language: f"[{language}] Route {route} detour #{number} (g{generation})" for language in languages},
            description={language: f"[{language}] Buses skip stops on Main St between 3rd and 9th Ave; "
                                    f"use the temporary stops (g{generation})." for language in languages},
            url={"en": f"https://agency.example/alerts/{number}"},
            cause="CONSTRUCTION", effect="DETOUR", severity="WARNING",
            active=[(now - 3600, now + 30 * 86400)],
            entities=[{"agency_id": agency_id, "route_id": route}]))
    return alerts


# MARK: The server

class AlertFeedServer(ThreadingHTTPServer):
    """The feed on a free loopback port, served from a thread."""
    daemon_threads = True

    def __init__(self, alerts=(), host="127.0.0.1", port=0, start=True):
        super().__init__((host, port), AlertFeedHandler)
        self.lock = threading.Lock()
        self._mode = "ok"
        self._hang = threading.Event()
        # Whether Accept-Encoding: gzip is honoured (a test may turn it off to
        # send the huge body uncompressed whatever the client asks).
        self.gzip = True
        self.requests = 0
        self.not_modified = 0
        self.gzipped = 0
        # [(method, path, [(name, value)])] of every request, in order.
        self.received = []
        self.version = 0
        self._modified = 0
        self._entities = []
        self._body = b""
        self._cache = {}
        # What /control/ regenerates from (set by the standalone server only).
        self.options = None
        self.set_alerts(alerts)
        if start:
            threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}{FEED_PATH}"

    @property
    def origin(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    # Content

    def set_alerts(self, alerts):
        """Replaces the content: FeedEntity values or make_alert keyword dicts (with "id")."""
        entities = [alert if isinstance(alert, gtfs_realtime_pb2.FeedEntity) else alert_from_dict(alert) for alert in alerts]
        self._replace(entities, None)

    def set_body(self, body):
        """Replaces the content with raw bytes (a feed patched by hand)."""
        self._replace(None, bytes(body))

    def _replace(self, entities, body):
        with self.lock:
            self.version += 1
            # Last-Modified has one-second resolution: each version a later second.
            self._modified = max(int(time.time()), self._modified + 1)
            self._entities = entities
            self._body = body if body is not None else feed_message(entities, self._modified).SerializeToString()
            self._cache = {}

    @property
    def entities(self):
        return list(self._entities or [])

    @property
    def body(self):
        return self._body

    @property
    def etag(self):
        return f'"v{self.version}"'

    @property
    def last_modified(self):
        return email.utils.formatdate(self._modified, usegmt=True)

    # Mode

    @property
    def mode(self):
        return self._mode

    @mode.setter
    def mode(self, value):
        if value not in MODES:
            raise ValueError(f"mode {value} is not one of {MODES}")
        with self.lock:
            self._mode = value
            # Requests hanging in the previous mode give up (without an answer).
            released, self._hang = self._hang, threading.Event()
        released.set()

    def close(self):
        self._hang.set()
        self.shutdown()
        self.server_close()

    # What was received

    def header_values(self, name):
        """Every value of header `name` the server received, in order."""
        with self.lock:
            return [value for _, _, headers in self.received for key, value in headers if key.lower() == name.lower()]

    @property
    def last_headers(self):
        with self.lock:
            return dict((key.lower(), value) for key, value in self.received[-1][2]) if self.received else {}

    def stats(self):
        with self.lock:
            return {"requests": self.requests, "not_modified": self.not_modified, "gzipped": self.gzipped,
                    "version": self.version, "mode": self._mode, "bytes": len(self._body),
                    "alerts": len(self._entities or [])}

    # Bodies of each mode, made once per version

    def rendition(self, mode):
        """(status, content type, body, validators) for `mode` at this version."""
        with self.lock:
            key = mode
            if key in self._cache:
                return self._cache[key]
            body = self._body
            validators = [("ETag", self.etag), ("Last-Modified", self.last_modified)]
            if mode == "ok":
                made = (200, "application/x-protobuf", body, validators)
            elif mode == "duplicate_ids":
                # Every entity twice, the copy's header changed: which one wins is the reader's problem.
                copies = []
                for entity in self._entities or []:
                    copy = gtfs_realtime_pb2.FeedEntity()
                    copy.CopyFrom(entity)
                    for translation in copy.alert.header_text.translation:
                        translation.text += " (duplicate)"
                    copies += [entity, copy]
                made = (200, "application/x-protobuf", feed_message(copies, self._modified).SerializeToString(),
                        [("ETag", f'"v{self.version}-duplicates"'), ("Last-Modified", self.last_modified)])
            elif mode == "huge":
                # The current feed followed by 20 MB in an extension field
                # (FeedMessage's 1000-1999): still a valid feed to a reader
                # that skips what it does not know, so only a size limit stops it.
                made = (200, "application/x-protobuf", body + length_delimited(1000, bytes(HUGE_BYTES)), [])
            elif mode == "truncated":
                made = (200, "application/x-protobuf", truncated(body), [])
            elif mode == "garbage":
                noise = random.Random(self.version).randbytes(64 * 1024)
                # 0xFF first: field 31 of wire type 7, which no protobuf reader accepts.
                made = (200, "application/x-protobuf", b"\xff" + noise, [])
            elif mode == "html":
                made = (200, "text/html; charset=utf-8",
                        b"<!DOCTYPE html>\n<html><head><title>Scheduled maintenance</title></head>"
                        b"<body><h1>We'll be back soon</h1><p>The realtime feeds are down for maintenance.</p></body></html>\n",
                        [])
            elif mode == "500":
                made = (500, "text/plain; charset=utf-8", b"Internal Server Error\n", [])
            else:  # short_read, hang: written by the handler
                made = (200, "application/x-protobuf", body, [])
            self._cache[key] = made
            return made


def truncated(body):
    """`body` cut near its middle where the cut leaves it unreadable (a cut
    that happens to fall between two entities would be a shorter valid feed)."""
    for cut in range(len(body) // 2, len(body)):
        try:
            gtfs_realtime_pb2.FeedMessage().ParseFromString(body[:cut])
        except Exception:
            return body[:cut]
    return body[:max(len(body) // 2, 1)]


class AlertFeedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        path, _, query = self.path.partition("?")
        if path.startswith("/control/"):
            return self.control(path, urllib.parse.parse_qs(query))
        with server.lock:
            server.requests += 1
            server.received.append(("GET", self.path, list(self.headers.items())))
            mode, hang = server._mode, server._hang
        if path != FEED_PATH:
            return self.answer(404, "text/plain", b"not found\n")
        if mode == "hang":
            # Accepts the request and never answers: until the mode changes,
            # the server closes, or two minutes pass.
            hang.wait(120)
            self.close_connection = True
            return
        status, content_type, body, validators = server.rendition(mode)
        if validators and self.unchanged(dict(validators)):
            with server.lock:
                server.not_modified += 1
            self.send_response(304)
            for name, value in validators:
                self.send_header(name, value)
            self.end_headers()
            return
        if mode == "short_read":
            # Promises the whole feed, sends half, hangs up.
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.write(body[:len(body) // 2])
            self.close_connection = True
            return
        encoding = None
        if server.gzip and self.accepts_gzip():
            encoding = "gzip"
            body = self.compressed(mode, body)
            with server.lock:
                server.gzipped += 1
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in validators:
            self.send_header(name, value)
        self.send_header("Vary", "Accept-Encoding")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        if mode == "huge":
            # No Content-Length: the body ends when the connection does, so a
            # reader cannot refuse it from the header alone and must stop
            # counting while it reads.
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
        self.write(body)

    def do_POST(self):
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if path.startswith("/control/"):
            return self.control(path, urllib.parse.parse_qs(query))
        self.answer(405, "text/plain", b"method not allowed\n")

    def unchanged(self, validators):
        """Whether the client's conditional headers match (If-None-Match wins over If-Modified-Since)."""
        tags = self.headers.get("If-None-Match")
        if tags is not None:
            current = validators["ETag"].removeprefix("W/")
            offered = [tag.strip().removeprefix("W/") for tag in tags.split(",")]
            return "*" in offered or current in offered
        since = self.headers.get("If-Modified-Since")
        if since is not None:
            try:
                return email.utils.parsedate_to_datetime(since).timestamp() >= self.server._modified
            except (TypeError, ValueError):
                return False
        return False

    def accepts_gzip(self):
        for part in (self.headers.get("Accept-Encoding") or "").split(","):
            name, _, parameters = part.strip().partition(";")
            if name.strip().lower() in ("gzip", "x-gzip", "*"):
                return parameters.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
        return False

    def compressed(self, mode, body):
        server = self.server
        with server.lock:
            key = ("gzip", mode, server.version)
            if key not in server._cache:
                server._cache[key] = gzip.compress(body, compresslevel=6, mtime=0)
            return server._cache[key]

    def write(self, body):
        try:
            view = memoryview(body)
            for start in range(0, len(body), 1 << 16):
                self.wfile.write(view[start:start + (1 << 16)])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the reader gave up (a size limit): expected

    def answer(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.write(body)

    def control(self, path, query):
        """The standalone server's remote control (the benchmark's shell drives it)."""
        server = self.server
        name = path.removeprefix("/control/")
        if name == "stats":
            return self.answer(200, "application/json", json.dumps(server.stats()).encode())
        if self.command != "POST":
            return self.answer(405, "text/plain", b"POST\n")
        if server.options is None:
            return self.answer(404, "text/plain", b"no remote control: not the standalone server\n")
        if name == "change-all":
            options = server.options
            options["generation"] += 1
            server.set_alerts(big_feed_alerts(options["alerts"], options["translations"], options["generation"],
                                              options["agency_id"]) + options["added"])
        elif name == "add":
            entity_id = query.get("id", [f"new-{time.time_ns()}"])[0]
            now = int(time.time())
            server.options["added"].append(make_alert(
                entity_id, header={"en": f"Line closed ({entity_id})", "es": f"Línea cerrada ({entity_id})"},
                description={"en": "No service until further notice.", "es": "Sin servicio hasta nuevo aviso."},
                cause="TECHNICAL_PROBLEM", effect="NO_SERVICE", severity=query.get("severity", ["SEVERE"])[0],
                active=[(now - 60, now + 86400)], entities=[{"agency_id": server.options["agency_id"]}]))
            server.set_alerts(server.entities + server.options["added"][-1:])
        elif name == "mode":
            server.mode = query.get("mode", ["ok"])[0]
        else:
            return self.answer(404, "text/plain", b"unknown control\n")
        self.answer(200, "application/json", json.dumps(server.stats()).encode())


def main():
    parser = argparse.ArgumentParser(description="Serve a GTFS-realtime Alerts feed of many alerts.")
    parser.add_argument("--alerts", type=int, default=1000)
    parser.add_argument("--translations", type=int, default=40)
    parser.add_argument("--agency-id", default="1")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    arguments = parser.parse_args()
    server = AlertFeedServer(big_feed_alerts(arguments.alerts, arguments.translations, 0, arguments.agency_id),
                             host=arguments.host, port=arguments.port, start=False)
    server.options = {"alerts": arguments.alerts, "translations": arguments.translations, "generation": 0,
                      "agency_id": arguments.agency_id, "added": []}
    print(f"http://{arguments.host}:{server.server_address[1]}{FEED_PATH}", flush=True)
    print(f"{arguments.alerts} alerts x {arguments.translations} translations, {len(server.body)} bytes", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
