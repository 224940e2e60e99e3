#!/usr/bin/env python3
"""Runs the production checklist (docs/production-checklist.md), command by command, on a scratch host.

    checklist.py BIN

As root, in a private mount namespace, overlays are laid over /etc, /usr/local,
/var, /run and the checkout, so each command writes the paths it names and the
machine is left as it was. Every line of the `sh` blocks of the checklist
(up to "How the test runs this checklist") runs as typed, in order, with what an operator brings:

  - a OneBusAway key file (oba-api-key.txt) in the checkout;
  - `sudoedit FILE`: the edits an operator makes (the regions template's servers
    pointed at a local stand-in for OneBusAway, the port, public URL and regions
    set in sidecar.env);
  - `sudo`: we are root already;
  - `systemctl`: no systemd runs here, so this script plays it (`systemctl-play`):
    ExecStart= under a fresh unprivileged id that owns only the state directory
    (DynamicUser=), with the unit's Environment=, EnvironmentFile= and a private
    copy of each LoadCredential= file in $CREDENTIALS_DIRECTORY.

`https://sidecar.example.org` and `127.0.0.1:8080` stand for the scratch listener.
Then: the service still writes after the root commands, its log holds no key, and
a key file placed where the service cannot read it fails `doctor --as-service`
with the credential fix.
"""
import http.server
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_support import check, fail, free_port, read  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THIS = os.path.abspath(__file__)
SERVICE_UID = 61234  # inside systemd's DynamicUser= range (61184-65519)
PID_FILE = "/run/sidecar-play.pid"
LOG_FILE = "/run/sidecar-play.log"
OBA_KEY = "checklist-oba-key-4711"




# ---- the checklist's commands

def checklist_commands():
    text = read(os.path.join(ROOT, "docs", "production-checklist.md"))
    end = text.index("**How the test runs this checklist.**")
    blocks = re.findall(r"```sh\n(.*?)```", text[:end], re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    check(len(commands) >= 10, f"the checklist has only {len(commands)} commands")
    return commands


# ---- systemd, played

def unit_settings():
    """The unit and its drop-ins: (key, value) pairs of [Service], in order."""
    path = "/etc/systemd/system/sidecar.service"
    files = [path] + sorted(
        os.path.join(path + ".d", f) for f in os.listdir(path + ".d") if f.endswith(".conf")) if os.path.isdir(path + ".d") else [path]
    settings = []
    for file in files:
        section = ""
        for raw in read(file).replace("\\\n", " ").splitlines():
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
                continue
            if section == "[Service]" and "=" in line:
                key, value = line.split("=", 1)
                settings.append((key.strip(), value.strip()))
    return settings


def environment_file(path):
    values = {}
    for raw in read(path).splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        name, value = line.split("=", 1)
        values[name.strip()] = " ".join(shlex.split(value)) if value[:1] in "\"'" else value.strip()
    return values


def play_start():
    settings = unit_settings()
    credentials_dir = "/run/credentials/sidecar.service"

    def expand(value):
        return value.replace("%d", credentials_dir).replace("%S", "/var/lib").replace("%%", "%")

    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    credentials, files, state, exec_start, working = [], [], [], None, "/"
    for key, value in settings:
        if key == "Environment":
            for word in shlex.split(value):
                name, _, assigned = word.partition("=")
                environment[name] = expand(assigned)
        elif key == "EnvironmentFile":
            files.append(value)
        elif key == "LoadCredential":
            credentials.append(value.split(":", 1))
        elif key == "StateDirectory":
            state += value.split()
        elif key == "ExecStart":
            exec_start = shlex.split(value.lstrip("-@:+!"))
        elif key == "WorkingDirectory":
            working = value.lstrip("-")
    for file in files:
        optional = file.startswith("-")
        path = file.lstrip("-")
        if not os.path.exists(path):
            check(optional, f"EnvironmentFile={path} is missing: systemd would not start the service")
            continue
        environment.update(environment_file(path))
    # DynamicUser=: the state directory lives in /var/lib/private, owned by
    # the fresh id, with /var/lib/NAME a link to it.
    for name in state:
        private = f"/var/lib/private/{name}"
        # systemd keeps /var/lib/private at 0700 and lets only the service
        # through it (in the service's own mount namespace); here the
        # directory is searchable instead, which the service sees the same.
        os.makedirs("/var/lib/private", mode=0o711, exist_ok=True)
        os.chmod("/var/lib/private", 0o711)
        public = f"/var/lib/{name}"
        if os.path.isdir(public) and not os.path.islink(public):
            if os.path.exists(private):
                shutil.rmtree(private)
            shutil.move(public, private)
        os.makedirs(private, mode=0o700, exist_ok=True)
        for directory, _, names in os.walk(private):
            os.chown(directory, SERVICE_UID, SERVICE_UID)
            for n in names:
                os.chown(os.path.join(directory, n), SERVICE_UID, SERVICE_UID)
        if not os.path.islink(public):
            os.symlink(f"private/{name}", public)
    if credentials:
        shutil.rmtree(credentials_dir, ignore_errors=True)
        os.makedirs(credentials_dir, mode=0o500)
        for ident, source in credentials:
            check(os.path.isfile(source), f"LoadCredential={ident}:{source}: missing, systemd would not start the service")
            target = os.path.join(credentials_dir, ident)
            shutil.copyfile(source, target)
            os.chown(target, SERVICE_UID, SERVICE_UID)
            os.chmod(target, 0o400)
        os.chown(credentials_dir, SERVICE_UID, SERVICE_UID)
        environment["CREDENTIALS_DIRECTORY"] = credentials_dir

    def become_service():
        os.setsid()
        os.setgroups([])
        os.setgid(SERVICE_UID)
        os.setuid(SERVICE_UID)
        os.umask(0o077)

    log = open(LOG_FILE, "a")
    process = subprocess.Popen(exec_start, env=environment, cwd=working, stdout=log, stderr=log, preexec_fn=become_service)
    with open(PID_FILE, "w") as f:
        f.write(str(process.pid))
    port = environment.get("SIDECAR_PORT", "8080")
    deadline = time.monotonic() + 120  # only catches a hang: the loop ends at the first answer
    while time.monotonic() < deadline:
        check(process.poll() is None, f"the service exited ({process.returncode}):\n{read(LOG_FILE)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return
        except OSError:
            time.sleep(0.1)
    fail(f"the service never answered /healthz:\n{read(LOG_FILE)}")


def play_pid():
    """The service's pid while it runs (a zombie waiting for its reaper counts as ended)."""
    try:
        pid = int(read(PID_FILE))
        state = read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[0]
        return None if state in ("Z", "X") else pid
    except (OSError, ValueError, IndexError):
        return None


def play_systemctl(arguments):
    words = [a for a in arguments if not a.startswith("-")]
    verb = words[0] if words else ""
    if verb == "daemon-reload":
        return 0
    if verb in ("start", "restart") or (verb == "enable" and "--now" in arguments):
        if play_pid():
            play_stop()
        play_start()
        return 0
    if verb == "enable":
        return 0
    if verb == "status":
        pid = play_pid()
        print(f"sidecar.service - Sidecar (played by {os.path.basename(THIS)})")
        print(f"     Active: active (running) pid {pid}" if pid else "     Active: inactive (dead)")
        return 0 if pid else 3
    if verb == "stop":
        play_stop()
        return 0
    fail(f"systemctl {' '.join(arguments)}: not a verb the checklist uses")


def play_stop():
    pid = play_pid()
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60  # only catches a hang
        while play_pid() and time.monotonic() < deadline:
            time.sleep(0.05)
        if play_pid():
            os.kill(pid, signal.SIGKILL)
            fail(f"the service did not stop on SIGTERM:\n{read(LOG_FILE)}")
    if os.path.exists(PID_FILE):
        os.unlink(PID_FILE)


# ---- the operator's edits

def play_sudoedit(path, port, oba_port):
    if path.endswith("regions-v3.json"):
        text = read(path).replace("https://api.transit.example.org/", f"http://127.0.0.1:{oba_port}/")
        text = text.replace("https://sidecar.example.org", f"http://127.0.0.1:{port}")
    elif path.endswith("sidecar.env"):
        text = read(path) + (
            f"\n# the operator's settings\nSIDECAR_PORT={port}\nSIDECAR_PUBLIC_URL=http://127.0.0.1:{port}\n"
            "SIDECAR_REGIONS=/etc/sidecar/regions-v3.json\n")
    else:
        fail(f"sudoedit {path}: not a file the checklist edits")
    with open(path, "w") as f:
        f.write(text)
    return 0


# ---- a stand-in for the region's OneBusAway server

class OneBusAway(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/api/where/current-time") and f"key={OBA_KEY}" in self.path:
            body = json.dumps({"code": 200, "currentTime": int(time.time() * 1000), "text": "OK", "version": 2}).encode()
            self.send_response(200)
        else:
            body = b'{"code":404,"text":"not here","version":2}'
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# ---- inside the namespace

def overlay(target, scratch):
    name = target.strip("/").replace("/", "_") or "root"
    upper, workdir = os.path.join(scratch, name, "upper"), os.path.join(scratch, name, "work")
    os.makedirs(upper)
    os.makedirs(workdir)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={target},upperdir={upper},workdir={workdir}", target], check=True)


def inside(binary, scratch):
    for target in ("/etc", "/usr/local", "/var", "/run", ROOT):
        overlay(target, scratch)
    # The built binary where script/install looks for it (in the overlay).
    release = os.path.join(ROOT, ".build/release/sidecar")
    if not os.path.exists(release):
        os.makedirs(os.path.dirname(release), exist_ok=True)
        shutil.copy2(binary, release)
    port, oba = free_port(), http.server.ThreadingHTTPServer(("127.0.0.1", 0), OneBusAway)
    threading.Thread(target=oba.serve_forever, daemon=True).start()
    shims = os.path.join(scratch, "shims")
    os.makedirs(shims)
    play = f'exec {shlex.quote(sys.executable)} {shlex.quote(THIS)} - play {port} {oba.server_address[1]}'
    for name, body in {"sudo": 'exec "$@"', "systemctl": f'{play} systemctl "$@"', "sudoedit": f'{play} sudoedit "$@"'}.items():
        with open(os.path.join(shims, name), "w") as f:
            f.write(f"#!/bin/sh\n{body}\n")
        os.chmod(os.path.join(shims, name), 0o755)
    with open(os.path.join(ROOT, "oba-api-key.txt"), "w") as f:
        f.write(OBA_KEY + "\n")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SIDECAR_")}
    environment["PATH"] = shims + ":/usr/local/bin:" + environment.get("PATH", "/usr/bin:/bin")
    outputs = {}
    try:
        for command in checklist_commands():
            typed = command.replace("https://sidecar.example.org", f"http://127.0.0.1:{port}").replace("127.0.0.1:8080", f"127.0.0.1:{port}")
            stdin = "checklist-Passw0rd-long\n" if " user create " in command else ""
            result = subprocess.run(["bash", "-c", typed], cwd=ROOT, env=environment, input=stdin, capture_output=True, text=True, timeout=300)
            shown = (result.stdout + result.stderr).strip()
            check(result.returncode == 0, f"`{command}` exited {result.returncode}:\n{shown}")
            outputs[command] = shown
            print(f"checklist: ok  {command}")
        doctor = next(v for k, v in outputs.items() if "doctor --as-service" in k)
        check("all checks passed" in doctor, f"the doctor did not pass:\n{doctor}")
        check("credential       oba-api-key from /etc/sidecar/credentials/oba-api-key" in doctor, f"the doctor missed the credential:\n{doctor}")
        check(OBA_KEY not in doctor, "the doctor printed the key")
        status = next(v for k, v in outputs.items() if k.startswith("systemctl status"))
        check("active (running)" in status, status)
        key = next(v for k, v in outputs.items() if "apikey create" in k)
        check("obask_1_" in key and "/var/lib/sidecar/sidecar.sqlite3" in key, f"apikey create: {key}")
        probe = next(v for k, v in outputs.items() if k.startswith("sidecar probe"))
        check("no check failed" in probe or "every check passed" in probe, probe)
        # The service keeps writing after root's commands touched its database.
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v2/regions/1/push_registrations",
            data=b"token=checklist-token-0001&operating_system=ios&app_uid=checklist", method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            check(answer.status == 204, f"a registration after the root commands answered {answer.status}")
        for name in os.listdir("/var/lib/private/sidecar"):
            owner = os.stat(os.path.join("/var/lib/private/sidecar", name)).st_uid
            check(owner == SERVICE_UID, f"/var/lib/sidecar/{name} belongs to uid {owner}, not the service's")
        log = read(LOG_FILE)
        check("sidecar listening" in log, log)
        check(OBA_KEY not in log, "the service's log holds the OneBusAway key")
        check(os.path.exists("/var/backups/sidecar.sqlite3"), "the backup was not written")
        # A key file the service cannot read fails the doctor with the fix.
        with open("/etc/sidecar/weather.key", "w") as f:
            f.write("weather-key\n")
        os.chmod("/etc/sidecar/weather.key", 0o600)
        with open("/etc/sidecar/sidecar.env", "a") as f:
            f.write("SIDECAR_PIRATE_WEATHER_KEY_FILE=/etc/sidecar/weather.key\n")
        result = subprocess.run(["sidecar", "doctor", "--as-service", "--offline"], env=environment, capture_output=True, text=True)
        check(result.returncode == 1, f"doctor accepted a key the service cannot read:\n{result.stdout}")
        check("the service's user cannot pass /etc/sidecar/weather.key (mode 0600 root:root)" in result.stdout, result.stdout)
        check("/etc/sidecar/credentials/pirate-weather-key" in result.stdout, result.stdout)
        print(f"checklist: all {len(outputs)} commands ran as typed; the service (uid {SERVICE_UID}) kept writing "
              "after the root commands, its files stayed its own, its log holds no key; an unreadable key file fails the doctor")
    finally:
        play_stop()
        oba.shutdown()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "play":
        port, oba_port, tool, rest = sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
        sys.exit(play_systemctl(rest) if tool == "systemctl" else play_sudoedit(rest[0], port, oba_port))
    if len(sys.argv) > 2 and sys.argv[2] == "inside":
        inside(os.path.abspath(sys.argv[1]), sys.argv[3])
        sys.exit(0)
    check(os.geteuid() == 0, "the checklist runs as root (it installs into a scratch host)")
    check(shutil.which("unshare"), "unshare is missing (util-linux)")
    scratch = tempfile.mkdtemp(prefix="sidecar-checklist-")
    try:
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, THIS, sys.argv[1], "inside", scratch])
        sys.exit(result.returncode)
    finally:
        subprocess.run(["rm", "-rf", scratch])
