#!/usr/bin/env python3
"""The signed push relay against code nobody on the team wrote.

    relay.py BIN     (SIDECAR_PUSH_PEERS="DIR APNS_PORT FCM_PORT" names push_peers.py's stand-ins)

  - `sidecar relay` delivering to the HTTP/2 APNs stand-in;
  - a Python client written to the seed (Python's `cryptography` signs):
    its register-token and send are accepted, a replay and a tampered title
    are refused with 401;
  - two sidecars (A and B) with --push-transport relay: each binds the tokens
    its riders register; A's alert reaches A's tokens only; a token registered
    with both is reachable from both; a dead token comes back dropped and
    leaves A's registrations;
  - our client's version 2 signatures verified by `cryptography` in a
    stand-in relay.
"""
import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stops_and_faults as base  # noqa: E402
from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature  # noqa: E402
from cryptography.exceptions import InvalidSignature  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
base.BIN = BIN
WORK = base.WORK
check = base.check
PEERS = os.environ.get("SIDECAR_PUSH_PEERS", "").split()


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SeedClient:
    """A server written to the seed: its own P-256 key, version 1 requests."""

    def __init__(self, url):
        self.url = url
        self.key = ec.generate_private_key(ec.SECP256R1())
        numbers = self.key.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}

    def sign(self, text):
        r, s = decode_dss_signature(self.key.sign(text.encode(), ec.ECDSA(hashes.SHA256())))
        return b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def post(self, path, body):
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def register(self, token):
        ts = int(time.time() * 1000)
        return self.post("/v1/push/register-token", {"token": token, "platform": "ios", "publicKeyJwk": self.jwk, "ts": ts,
                                                    "sig": self.sign(f"{ts}.{token}.ios")})

    def send_body(self, tokens, title):
        ts = int(time.time() * 1000)
        return {"tokens": tokens, "title": title, "body": "From a Python client", "publicKeyJwk": self.jwk, "ts": ts,
                "sig": self.sign(f"{ts}.{','.join(sorted(tokens))}.{title}")}


def stats():
    with urllib.request.urlopen(f"http://127.0.0.1:{PEERS[2]}/stats", timeout=60) as response:
        return json.load(response)


class Relay:
    def __init__(self):
        directory, apns_port, _ = PEERS
        self.database = os.path.join(WORK, "relay.sqlite3")
        self.log = open(os.path.join(WORK, "relay.log"), "w")
        self.process = subprocess.Popen([BIN, "relay", "--host", "127.0.0.1", "--port", "0", "--database", self.database,
                                         "--apns-key-file", f"{directory}/apns.p8", "--apns-key-id", "KEYID12345", "--apns-team-id", "TEAMID1234",
                                         "--apns-url", f"https://127.0.0.1:{apns_port}", "--apns-sandbox-url", f"https://127.0.0.1:{apns_port}/sandbox",
                                         "--apns-ca-file", f"{directory}/ca.pem"], stdout=self.log, stderr=subprocess.STDOUT)
        base.STARTED.append(self.process)
        self.port = None
        deadline = time.monotonic() + 120  # only catches a hang: the loop ends at the event
        while time.monotonic() < deadline:
            text = open(self.log.name).read()
            if "relay listening" in text:
                self.port = int(text.split("relay listening", 1)[1].split("port=", 1)[1].split()[0])
                break
            check(self.process.poll() is None, f"the relay did not start:\n{text}")
            time.sleep(0.05)
        check(self.port, "the relay did not start")
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        code = self.process.wait(30)
        self.log.close()
        return code


def seed_client(relay):
    client = SeedClient(relay.url)
    token = "a1" * 32
    check(client.register(token) == (200, {"ok": True}), "the seed client's register-token was refused")
    before = stats()["apns"]
    body = client.send_body([token, "b2" * 32], "Route 44 detoured")
    status, answer = client.post("/v1/push/send", body)
    check(status == 200 and answer == {"results": [{"token": token, "ok": True}, {"token": "b2" * 32, "ok": False}]}, f"send: {status} {answer}")
    check(stats()["apns"] == before + 1, "the relay did not reach APNs once")
    check(client.post("/v1/push/send", body) == (401, {"error": "replay"}), "a replayed send was accepted")
    tampered = client.send_body([token], "Route 44 detoured")
    tampered["title"] = "Tampered"
    check(client.post("/v1/push/send", tampered) == (401, {"error": "invalid_signature"}), "a tampered title was accepted")
    stale = client.send_body([token], "x")
    stale["ts"] = stale["ts"] // 1000
    check(client.post("/v1/push/send", stale)[0] == 401, "a ts in seconds was accepted")
    print("seed client: a Python client written to the seed (cryptography) registered and sent through the relay to APNs; "
          "its replay, a tampered title and a ts in seconds were refused with 401")
    replays(client, token)
    cross_server_drop(relay)


N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def replays(client, token):
    """A captured send replayed with its signature re-spelled, malleated to
    the other valid form, or carrying another body: one push, never more."""
    before = stats()["apns"]
    body = client.send_body([token], "Route 44 detoured")
    check(client.post("/v1/push/send", body)[0] == 200, "the genuine send was refused")
    raw = unb64(body["sig"])
    r, s = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    other = b64(r.to_bytes(32, "big") + (N - s).to_bytes(32, "big"))
    client.key.public_key().verify(encode_dss_signature(r, N - s), f"{body['ts']}.{token}.Route 44 detoured".encode(), ec.ECDSA(hashes.SHA256()))
    last = ALPHABET.index(body["sig"][-1])
    respelled = body["sig"][:-1] + ALPHABET[last ^ 1]
    check(unb64(respelled) == raw, "the re-spelled signature should decode to the same bytes")
    outcomes = {}
    for name, signature, text in [("padded", body["sig"] + "==", None), ("re-spelled", respelled, None), ("high-S", other, None),
                                  ("swapped body", body["sig"], "ATTACKER TEXT: tap evil.example")]:
        replay = dict(body, sig=signature)
        if text:
            replay["body"] = text
        outcomes[name] = client.post("/v1/push/send", replay)
    check(outcomes["padded"] == (401, {"error": "invalid_signature"}) and outcomes["re-spelled"] == (401, {"error": "invalid_signature"}),
          f"re-encoded signatures: {outcomes}")
    check(outcomes["high-S"] == (401, {"error": "replay"}) and outcomes["swapped body"] == (401, {"error": "replay"}), f"replays: {outcomes}")
    check(stats()["apns"] == before + 1, f"one signed send reached APNs {stats()['apns'] - before} times")
    # A fresh send signed in the high-S form is accepted: the seed's clients make one half the time.
    accepted = 0
    for number in range(4):
        fresh = client.send_body([token], f"Fresh {number}")
        raw = unb64(fresh["sig"])
        r, s = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
        high = s if s > N // 2 else N - s
        fresh["sig"] = b64(r.to_bytes(32, "big") + high.to_bytes(32, "big"))
        accepted += client.post("/v1/push/send", fresh)[0] == 200
    check(accepted == 4, f"high-S sends accepted: {accepted} of 4")
    print("relay replays: a captured send re-spelled (== padding, another last character) refused as invalid_signature; malleated to "
          "(r, n-s) and with a swapped body refused as replay; APNs reached once; 4 fresh high-S sends accepted")


def cross_server_drop(relay):
    """A malicious server binds another's token and sends it to the sandbox:
    APNs answers BadDeviceToken, and only the sender's binding ends."""
    victim, attacker = SeedClient(relay.url), SeedClient(relay.url)
    token = "prod" + "7e" * 30
    check(victim.register(token)[0] == 200 and attacker.register(token)[0] == 200, "binding refused")
    body = attacker.send_body([token], "x")
    body["env"] = "sandbox"
    status, answer = attacker.post("/v1/push/send", body)
    check(status == 200 and answer["results"][0].get("drop") is True, f"the attacker's send: {status} {answer}")
    status, answer = victim.post("/v1/push/send", victim.send_body([token], "Route 44 detoured"))
    check(status == 200 and answer["results"][0] == {"token": token, "ok": True}, f"the victim lost its binding: {answer}")
    print("relay drops: an attacker's sandbox send to another server's production token got drop: true; the victim still delivers to it")


def registration_ids(database):
    connection = sqlite3.connect(database)
    tokens = {row[0] for row in connection.execute("SELECT token FROM push_registrations")}
    connection.close()
    return tokens


def two_sidecars(relay):
    keys = {name: os.path.join(WORK, f"{name}-relay-key.pem") for name in "AB"}
    databases = {name: os.path.join(WORK, f"{name}.sqlite3") for name in "AB"}
    flags = lambda name: ["--push-transport", "relay", "--relay-url", relay.url, "--relay-key-file", keys[name], "--push-registration-limit", "0"]
    a = base.Sidecar(databases["A"], *flags("A"))
    b = base.Sidecar(databases["B"], *flags("B"))
    try:
        shared, only_a, only_b, dead = "5a" * 32, "0a" * 32, "0b" * 32, "dead" + "0d" * 30
        for sidecar, tokens in [(a, [shared, only_a, dead]), (b, [shared, only_b])]:
            for token in tokens:
                status, _ = sidecar.request("POST", "/api/v2/regions/1/push_registrations", f"token={token}&operating_system=ios",
                                            {"Content-Type": "application/x-www-form-urlencoded"})
                check(status == 204, f"registration answered {status}")
        mode = oct(os.stat(keys["A"]).st_mode & 0o777)
        check(mode == "0o600", f"the relay key file is {mode}")
        # The binder binds in the background (every 5 s).
        relay_db = relay.database

        def bound(count):
            connection = sqlite3.connect(relay_db)
            rows = connection.execute("SELECT COUNT(*) FROM relay_bindings").fetchone()[0]
            connection.close()
            return rows >= count
        base.wait_for(lambda: bound(5), 30, "the sidecars did not bind their tokens at the relay")
        shown = subprocess.run([BIN, "relay-key", "show", "--relay-key-file", keys["A"]], capture_output=True, text=True).stdout
        server_a = shown.split("serverId: ", 1)[1].split()[0]

        # A's alert: to A's registrations only; the dead token dropped.
        base.cli(databases["A"], "region", "set", "--id", "1", "--agency-id", "1")
        alert = base.cli(databases["A"], "alert", "create", "--region", "1", "--header", "Route 44 detoured", "--start",
                         time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))).split()[2]
        base.cli(databases["A"], "alert", "publish", alert)
        before = stats()["apns"]
        done = subprocess.run([BIN, "alert", "send", alert, "--database", databases["A"], *flags("A")[:6]], capture_output=True, text=True)
        check("delivered 2" in done.stdout and "pruned 1" in done.stdout, f"alert send through the relay: {done.stdout}{done.stderr}")
        check(stats()["apns"] - before == 3, f"APNs saw {stats()['apns'] - before} pushes, not 3")
        check(registration_ids(databases["A"]) == {shared, only_a}, "the dropped token stayed in A's registrations")

        # A asking for B's token gets ok: false; the shared token reaches both.
        ask = subprocess.run([BIN, "push", "test", "--platform", "ios", "--token", only_b, *flags("A")[:6]], capture_output=True, text=True)
        check(ask.returncode != 0 and "not delivered" in ask.stdout, f"A reached B's token: {ask.stdout}{ask.stderr}")
        for name in "AB":
            reached = subprocess.run([BIN, "push", "test", "--platform", "ios", "--token", shared, *flags(name)[:6]], capture_output=True, text=True)
            check(reached.returncode == 0 and "delivered" in reached.stdout, f"{name} could not reach the shared token: {reached.stdout}{reached.stderr}")
    finally:
        a.stop()
        b.stop()
    print(f"two sidecars: each bound its riders' tokens (A is {server_a[:12]}…); A's alert reached A's two live tokens and "
          "pruned the dead one; A could not reach B's token; the token registered with both was reachable from both")


class VerifyingRelay(base.StandIn):
    """A stand-in relay that checks our client's version 2 signature with `cryptography`."""

    def __init__(self):
        super().__init__(VerifyingHandler)
        self.verified = []
        self.start()


class VerifyingHandler(base.QuietHandler):
    protocol_version = "HTTP/1.0"  # one request a connection, as before

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        document = json.loads(body)
        jwk = document["publicKeyJwk"]
        key = ec.EllipticCurvePublicNumbers(int.from_bytes(unb64(jwk["x"]), "big"), int.from_bytes(unb64(jwk["y"]), "big"),
                                            ec.SECP256R1()).public_key()
        digest = b64(hashlib.sha256(body).digest())
        signed = f"sidecar-relay-v2\nPOST\n{self.path}\n{self.headers['X-Relay-Timestamp']}\n{digest}"
        raw = unb64(self.headers["X-Relay-Signature"])
        signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        ok = self.headers["X-Relay-Content-SHA256"] == digest and self.headers["X-Relay-Signature-Version"] == "2"
        try:
            key.verify(signature, signed.encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            ok = False
        self.server.verified.append((self.path, ok))
        answer = json.dumps({"results": [{"token": t, "ok": ok} for t in document.get("tokens", [])]} if "tokens" in document else {"ok": ok}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def our_signatures():
    stand_in = VerifyingRelay()
    url = f"http://127.0.0.1:{stand_in.server_address[1]}"
    key = os.path.join(WORK, "verify-key.pem")
    done = subprocess.run([BIN, "push", "test", "--platform", "ios", "--token", "c3" * 32, "--push-transport", "relay", "--relay-url", url,
                           "--relay-key-file", key], capture_output=True, text=True)
    check(done.returncode == 0, f"push test through the stand-in: {done.stdout}{done.stderr}")
    check(stand_in.verified == [("/v1/push/send", True)], f"cryptography did not verify our signature: {stand_in.verified}")
    stand_in.shutdown()
    print("signatures: our client's version 2 request signature verified by Python's cryptography")


def main():
    if len(PEERS) != 3:
        print("relay checks skipped: SIDECAR_PUSH_PEERS is not set (run through script/peer-checks)", file=sys.stderr)
        return
    our_signatures()
    relay = Relay()
    try:
        seed_client(relay)
        two_sidecars(relay)
    finally:
        check(relay.stop() == 0, "the relay did not stop cleanly")


if __name__ == "__main__":
    main()
