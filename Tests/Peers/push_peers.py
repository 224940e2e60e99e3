#!/usr/bin/env python3
"""Local stand-ins for Apple's and Google's push services, written on
others' libraries: hypercorn + h2 serve APNs over HTTP/2 with TLS (a
trustme CA), and PyJWT verifies the sidecar's ES256 provider tokens and
RS256 service-account assertions.

Usage: push_peers.py WORKDIR TLS_PORT PLAIN_PORT
Writes WORKDIR/{ca.pem, apns.p8, service-account.json} and records what
arrives; GET /stats (on either port) returns the record as JSON.
Tokens starting with "prod" answer 400 BadDeviceToken on the sandbox path (a
production token sent to the wrong environment). Tokens starting with "dead" answer 410 Unregistered (APNs) or
UNREGISTERED (FCM); "busy" answers 429 once, then 200."""
import asyncio
import json
import sys
import time

import jwt
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypercorn.asyncio import serve
from hypercorn.config import Config

WORK, TLS_PORT, PLAIN_PORT = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

apns_key = ec.generate_private_key(ec.SECP256R1())
open(f"{WORK}/apns.p8", "wb").write(apns_key.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
fcm_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
token_uri = f"http://127.0.0.1:{PLAIN_PORT}/token"
json.dump({"type": "service_account", "project_id": "oba-peer", "client_email": "push@oba-peer.iam.gserviceaccount.com",
           "private_key": fcm_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()).decode(),
           "token_uri": token_uri}, open(f"{WORK}/service-account.json", "w"))
ca = trustme.CA()
ca.cert_pem.write_to_path(f"{WORK}/ca.pem")
server_cert = ca.issue_cert("127.0.0.1", "localhost")
server_cert.private_key_pem.write_to_path(f"{WORK}/server.key")
server_cert.cert_chain_pems[0].write_to_path(f"{WORK}/server.pem")

stats = {"apns": 0, "apns_http2": 0, "apns_jwt_verified": 0, "apns_sandbox_paths": 0, "apns_topics": [], "apns_push_types": [],
         "apns_bad_jwt": 0, "fcm_tokens_issued": 0, "fcm_sent": 0, "busy_seen": []}


async def read_body(receive):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def answer(send, status, payload, headers=()):
    body = json.dumps(payload).encode() if payload is not None else b""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())] + list(headers)})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    headers = {k.decode(): v.decode() for k, v in scope["headers"]}
    body = await read_body(receive)
    if path == "/stats":
        return await answer(send, 200, stats)
    if "/3/device/" in path:
        stats["apns"] += 1
        if scope.get("http_version") == "2":
            stats["apns_http2"] += 1
        if path.startswith("/sandbox/"):
            stats["apns_sandbox_paths"] += 1
        token = headers.get("authorization", "").removeprefix("bearer ")
        try:
            claims = jwt.decode(token, apns_key.public_key(), algorithms=["ES256"], options={"verify_aud": False})
            assert jwt.get_unverified_header(token)["kid"] == "KEYID12345" and claims["iss"] == "TEAMID1234"
            assert abs(claims["iat"] - time.time()) < 3600
            stats["apns_jwt_verified"] += 1
        except Exception:
            stats["apns_bad_jwt"] += 1
            return await answer(send, 403, {"reason": "InvalidProviderToken"})
        stats["apns_topics"] = sorted(set(stats["apns_topics"]) | {headers.get("apns-topic", "")})
        stats["apns_push_types"] = sorted(set(stats["apns_push_types"]) | {headers.get("apns-push-type", "")})
        payload = json.loads(body)
        assert "aps" in payload and "alert" in payload["aps"], payload
        device = path.rsplit("/", 1)[-1]
        if device.startswith("dead"):
            return await answer(send, 410, {"reason": "Unregistered", "timestamp": int(time.time() * 1000)})
        if device.startswith("prod") and path.startswith("/sandbox/"):
            # A production token sent to the sandbox, as APNs answers it.
            return await answer(send, 400, {"reason": "BadDeviceToken"})
        if device.startswith("busy") and device not in stats["busy_seen"]:
            stats["busy_seen"].append(device)
            return await answer(send, 429, {"reason": "TooManyRequests"})
        return await answer(send, 200, None, [(b"apns-id", b"00000000-0000-0000-0000-000000000000")])
    if path == "/token":
        form = dict(part.split("=", 1) for part in body.decode().split("&"))
        assert form["grant_type"] == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", form
        claims = jwt.decode(form["assertion"], fcm_key.public_key(), algorithms=["RS256"], audience=token_uri)
        assert claims["scope"] == "https://www.googleapis.com/auth/firebase.messaging"
        stats["fcm_tokens_issued"] += 1
        return await answer(send, 200, {"access_token": "ya29.peer", "expires_in": 3599, "token_type": "Bearer"})
    if path == "/v1/projects/oba-peer/messages:send":
        if headers.get("authorization") != "Bearer ya29.peer":
            return await answer(send, 401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}})
        message = json.loads(body)["message"]
        if message["token"].startswith("dead"):
            return await answer(send, 404, {"error": {"code": 404, "status": "NOT_FOUND", "details": [{"errorCode": "UNREGISTERED"}]}})
        stats["fcm_sent"] += 1
        return await answer(send, 200, {"name": "projects/oba-peer/messages/1"})
    return await answer(send, 404, {"reason": "NotFound"})


config = Config()
config.bind = [f"127.0.0.1:{TLS_PORT}"]
config.insecure_bind = [f"127.0.0.1:{PLAIN_PORT}"]
config.certfile = f"{WORK}/server.pem"
config.keyfile = f"{WORK}/server.key"
config.alpn_protocols = ["h2", "http/1.1"]
config.loglevel = "WARNING"
open(f"{WORK}/peers.ready", "w").write("ready")
asyncio.run(serve(app, config))
