#!/usr/bin/env python3
"""Decodes a running sidecar's alerts feed with Google's gtfs-realtime-bindings
(a protobuf implementation nobody on the team wrote) and checks the spec §3
contract. Usage: check_alerts_feed.py BASE_URL LIVE_ALERT_ID TEST_ALERT_ID"""
import sys
import urllib.request

from google.transit import gtfs_realtime_pb2

base, live_id, test_id = sys.argv[1], sys.argv[2], sys.argv[3]


def feed(path):
    with urllib.request.urlopen(base + path) as response:
        assert response.status == 200, response.status
        message = gtfs_realtime_pb2.FeedMessage()
        message.ParseFromString(response.read())
        return message


plain = feed("/api/v1/regions/1/alerts")
assert plain.header.gtfs_realtime_version == "1.0", plain.header
assert [e.id for e in plain.entity] == [f"Alert_{live_id}"], [e.id for e in plain.entity]
alert = plain.entity[0].alert
assert alert.informed_entity[0].agency_id == "1", alert.informed_entity
assert alert.active_period[0].end - alert.active_period[0].start == 8 * 3600, alert.active_period
assert alert.cause == gtfs_realtime_pb2.Alert.CONSTRUCTION, alert.cause
assert alert.effect == gtfs_realtime_pb2.Alert.DETOUR, alert.effect
assert alert.severity_level == gtfs_realtime_pb2.Alert.WARNING, alert.severity_level
languages = [t.language for t in alert.header_text.translation]
assert languages == ["en", "es"], languages
assert alert.header_text.translation[1].text == "Ruta 44 desviada"

suffixed = feed("/api/v1/regions/1-puget-sound/alerts.pb?test=1")
assert [e.id for e in suffixed.entity] == [f"Alert_{test_id}", f"Alert_{live_id}"], [e.id for e in suffixed.entity]

empty = feed("/api/v1/regions/0/alerts")
assert empty.header.gtfs_realtime_version == "1.0" and len(empty.entity) == 0

print("alerts feed: decoded by gtfs-realtime-bindings, 3 feeds checked")
