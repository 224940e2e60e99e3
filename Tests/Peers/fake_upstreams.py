#!/usr/bin/env python3
"""One local stand-in for every upstream the sidecar talks to, for the
black-box conformance run: a OneBusAway REST API that knows any stop and
trip, Pirate Weather (the reference sidecar's fixture) and Stripe.
Usage: fake_upstreams.py PORT FIXTURES_DIR"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PORT, FIXTURES = int(sys.argv[1]), sys.argv[2]
PIRATE = open(f"{FIXTURES}/sidecar/pirate.json", "rb").read()


def arrival(stop, trip, service_date, offset_minutes):
    when = int(time.time() * 1000) + offset_minutes * 60_000
    return {"stopId": stop, "tripId": trip, "routeId": "1_100", "routeShortName": "44", "tripHeadsign": "Ballard",
            "serviceDate": service_date, "stopSequence": 3, "vehicleId": "1_4361", "predicted": True,
            "predictedDepartureTime": when, "scheduledDepartureTime": when, "predictedArrivalTime": when,
            "scheduledArrivalTime": when, "lastUpdateTime": when - 60_000}


def envelope(data):
    return {"code": 200, "currentTime": int(time.time() * 1000), "text": "OK", "version": 2, "data": data}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, payload, status=200, raw=None):
        body = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route(self):
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = url.path.split("/")
        if url.path.startswith("/forecast/"):
            return self.answer(None, raw=PIRATE)
        if url.path.startswith("/api/where/"):
            method, ident = parts[3], parts[-1][:-5] if parts[-1].endswith(".json") else parts[-1]
            if method == "arrival-and-departure-for-stop":
                return self.answer(envelope({"entry": arrival(ident, query.get("tripId", "t"), int(query.get("serviceDate", "0") or 0), 20),
                                             "references": {"routes": [{"id": "1_100", "shortName": "44"}]}}))
            if method == "arrivals-and-departures-for-stop":
                return self.answer(envelope({"entry": {"stopId": ident, "arrivalsAndDepartures": [arrival(ident, "t1", 0, 5)]},
                                             "references": {}}))
            if method == "agencies-with-coverage.json" or url.path.endswith("agencies-with-coverage.json"):
                return self.answer(envelope({"list": [{"agencyId": "1"}], "references": {"agencies": [{"id": "1", "name": "Metro"}]}}))
            if method == "vehicles-for-agency":
                return self.answer(envelope({"list": [{"vehicleId": f"1_{n}"} for n in range(1000, 1300)], "references": {}}))
            if method == "trip-details":
                return self.answer(envelope({"entry": {"tripId": ident, "status": {"predicted": True}}, "references": {}}))
            return self.answer({"code": 404}, status=404)
        if url.path == "/v1/customers" and self.command == "GET":
            return self.answer({"object": "list", "data": []})
        stripe = {"/v1/customers": {"id": "cus_1"}, "/v1/products": {"id": "prod_1"},
                  "/v1/payment_intents": {"id": "pi_1", "client_secret": "pi_1_secret"},
                  "/v1/subscriptions": {"id": "sub_1", "latest_invoice": {"payment_intent": {"client_secret": "pi_2_secret"}}},
                  "/v1/ephemeral_keys": {"id": "ek_1", "secret": "ek_secret"}}
        if url.path in stripe:
            return self.answer(stripe[url.path])
        return self.answer({"error": "unknown"}, status=404)

    def do_GET(self):
        self.route()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        self.rfile.read(length)
        self.route()


class Server(ThreadingHTTPServer):
    daemon_threads = True


Server(("127.0.0.1", PORT), Handler).serve_forever()
