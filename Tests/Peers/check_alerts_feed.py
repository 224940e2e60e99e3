#!/usr/bin/env python3
"""Decodes a running sidecar's alerts feed with Google's gtfs-realtime-bindings
(a protobuf implementation nobody on the team wrote) and checks the spec §3
contract, then reads the fields google/transit#546 added (communication_period = 2,
impact_period = 3) from the raw wire format, since the published bindings may
predate them. Usage: check_alerts_feed.py BASE_URL LIVE_ALERT_ID TEST_ALERT_ID IMPACT_ALERT_ID"""
import calendar
import os
import sys
import time
import urllib.request

from google.transit import gtfs_realtime_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alert_feed_server import fields  # noqa: E402  (protobuf fields read by hand)

base, live_id, test_id, impact_id = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
impact_times = sys.argv[5:9]


def fetch(path):
    with urllib.request.urlopen(base + path) as response:
        assert response.status == 200, response.status
        return response.read()


def feed(path):
    message = gtfs_realtime_pb2.FeedMessage()
    message.ParseFromString(fetch(path))
    return message


def raw_periods(body, entity_id):
    """{field number: [(start, end)]} of the periods of one entity's alert."""
    for number, _, entity in fields(body):
        if number != 2:
            continue
        members = list(fields(entity))
        if (1, 2, entity_id.encode()) not in members:
            continue
        alert = next(value for n, _, value in members if n == 5)
        periods = {}
        for n, wire, value in fields(alert):
            if n in (1, 2, 3) and wire == 2:
                range_ = dict((k, v) for k, _, v in fields(value))
                periods.setdefault(n, []).append((range_.get(1), range_.get(2)))
        return periods
    raise AssertionError(f"{entity_id} not in the feed")


def seconds(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


plain = feed("/api/v1/regions/1/alerts")
assert plain.header.gtfs_realtime_version == "1.0", plain.header
# Stamped when the content last changed (the last publish, moments ago): never ahead, and the same bytes after it.
assert time.time() - 600 < plain.header.timestamp <= time.time() + 1, plain.header.timestamp
first = fetch("/api/v1/regions/1/alerts")
time.sleep(1.1)
assert fetch("/api/v1/regions/1/alerts") == first, "an unchanged feed changed its bytes"
# What riders need now first: the live alert, then the upcoming one.
assert [e.id for e in plain.entity] == [f"Alert_{live_id}", f"Alert_{impact_id}"], [e.id for e in plain.entity]
alert = plain.entity[0].alert
assert alert.informed_entity[0].agency_id == "1", alert.informed_entity
assert alert.active_period[0].end - alert.active_period[0].start == 8 * 3600, alert.active_period
assert alert.cause == gtfs_realtime_pb2.Alert.CONSTRUCTION, alert.cause
assert alert.effect == gtfs_realtime_pb2.Alert.DETOUR, alert.effect
assert alert.severity_level == gtfs_realtime_pb2.Alert.WARNING, alert.severity_level
languages = [t.language for t in alert.header_text.translation]
assert languages == ["en", "es"], languages
assert alert.header_text.translation[1].text == "Ruta 44 desviada"
assert [(t.language, t.text) for t in alert.description_text.translation] == [("en", "Skips 45th St"), ("es", "Salta la calle 45")], \
    "a Spanish title never sits over an English body"
# Traditional Chinese, the only Chinese: its own tag and the bare zh both apps match.
impact = plain.entity[1].alert
assert [(t.language, t.text) for t in impact.header_text.translation] == [
    ("en", "Station closed Saturday"), ("zh-Hant", "車站週六關閉"), ("zh", "車站週六關閉")], impact.header_text
assert impact.severity_level == gtfs_realtime_pb2.Alert.WARNING, "new alerts default to WARNING"

# The fields the bindings may not know, read raw: the same range as active_period, and the impact inside it.
body = fetch("/api/v1/regions/1/alerts")
shown = (seconds(impact_times[0]), seconds(impact_times[1]))
periods = raw_periods(body, f"Alert_{impact_id}")
assert periods == {1: [shown], 2: [shown], 3: [(seconds(impact_times[2]), seconds(impact_times[3]))]}, periods
live = raw_periods(body, f"Alert_{live_id}")
assert live[1] == live[2] and 3 not in live, live

suffixed = feed("/api/v1/regions/1-puget-sound/alerts.pb?test=1")
assert [e.id for e in suffixed.entity] == [f"Alert_{test_id}", f"Alert_{live_id}", f"Alert_{impact_id}"], [e.id for e in suffixed.entity]

empty = feed("/api/v1/regions/0/alerts")
assert empty.header.gtfs_realtime_version == "1.0" and len(empty.entity) == 0

print("alerts feed: decoded by gtfs-realtime-bindings, 3 feeds checked; communication_period (2) and impact_period (3) "
      "read raw, with and without an impact period; zh-Hant also under zh")
