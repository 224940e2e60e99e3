#!/usr/bin/env python3
"""Runs the docs' own commands: every `sidecar ...` line of a code block that
can run on this machine alone runs as written and must succeed.

    docs_commands.py BIN FIXTURES

Each page gets a scratch directory and a fresh database (SIDECAR_DATABASE, made
by `sidecar migrate` as a running server would have made it), and
regions 1 and 3 whose OneBusAway server is the local stand-in
(fake_upstreams.py, on loopback), so the commands that ask OneBusAway (an
agency id checked against its server) get an answer. Lines run in page order,
continuation lines joined and comments dropped; an optional part written
`[--flag VALUE]` is left out. A password a command reads from standard input is
given one. Ids the docs write (`sidecar alert show 7`) stand for the one the
page's `create` printed, so they are replaced by it.

Not run, with the reason printed in the summary: long-running servers (`serve`,
`relay`), commands that reach another host (a URL that is not this machine's,
`probe`, `alert send`, `source add|poll`, `push test`, a PostgreSQL URL), the
systemd ones (`--as-service`, run by checklist.py with the production
checklist, which has its own runner), and lines with placeholders
(`ID`, `ENTITY`, `...`, alternatives joined with `|`), a file the reader brings
(`import --file export.json`), and what acts on something a skipped line made.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_support import check, free_port, read  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN, FIXTURES = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PAGES = ["README.md"] + [f"docs/{name}" for name in sorted(os.listdir(os.path.join(ROOT, "docs")))
                         if name.endswith(".md") and name != "production-checklist.md"]
LONG_RUNNING = {"serve", "relay", "healthcheck"}
REACHES_OUT = {("probe", ""), ("alert", "send"), ("source", "add"), ("source", "poll"), ("push", "test")}
PLACEHOLDER = re.compile(r"(?<![\w-])(ID|ENTITY|PASSWORD|KEYID12345|TEAMID1234)(?![\w-])|\.\.\.|\s\|\s|\s/\s")
PASSWORD = "docs-example-password-4711\n"


def command_lines(text):
    """The page's code-block lines that start a sidecar command, joined and without comments."""
    lines, fenced, pending = [], False, ""
    for raw in text.splitlines():
        if raw.lstrip().startswith("```"):
            # Only shell blocks hold commands (a plain block is a tree or a diagram).
            fenced, pending = (raw.strip() == "```sh") if not fenced else False, ""
            continue
        if not fenced:
            continue
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        line = re.split(r"\s+#\s", line)[0].strip()
        if re.match(r"^(sudo )?sidecar ", line):
            lines.append(line)
    return lines


def skip_reason(words, line):
    command = words[1] if len(words) > 1 else ""
    sub = words[2] if len(words) > 2 and not words[2].startswith("-") else ""
    if command in LONG_RUNNING:
        return f"sidecar {command} keeps running"
    if (command, sub) in REACHES_OUT or (command, "") in REACHES_OUT:
        return f"sidecar {command} {sub} reaches another host".replace("  ", " ")
    if "--as-service" in words:
        return "reads the installed systemd service"
    if re.search(r"postgres(ql)?://", line):
        return "needs a PostgreSQL server"
    if re.search(r"https?://(?!127\.0\.0\.1)", line) and command != "links":
        return "reaches another host"
    if PLACEHOLDER.search(line):
        return "has placeholders"
    if "/var/" in line or "$(" in line:
        return "writes the service's paths"
    return None


def start_oba():
    port = free_port()
    upstream = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "Peers", "fake_upstreams.py"), str(port), FIXTURES],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/where/agencies-with-coverage.json?key=x", timeout=5)
            return upstream, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    upstream.kill()
    check(False, "the OneBusAway stand-in did not start")


def main():
    upstream, oba = start_oba()
    ran, skipped, problems, works = 0, {}, [], []
    try:
        for page in PAGES:
            lines = command_lines(read(os.path.join(ROOT, page)))
            if not lines:
                continue
            work = tempfile.mkdtemp(prefix="sidecar-docs-")
            works.append(work)
            regions = os.path.join(work, "regions.json")
            with open(regions, "w") as handle:
                json.dump({"data": {"list": [
                    {"id": 1, "regionName": "Puget Sound", "obaBaseUrl": oba + "/", "sidecarBaseUrl": None},
                    {"id": 3, "regionName": "Tampa Bay", "obaBaseUrl": oba + "/", "sidecarBaseUrl": None}]}}, handle)
            environment = {**os.environ, "SIDECAR_DATABASE": os.path.join(work, "sidecar.sqlite3"), "SIDECAR_REGIONS": regions}
            # The database a running server would have made.
            migrated = subprocess.run([BIN, "migrate"], capture_output=True, text=True, cwd=work, env=environment, timeout=120)
            check(migrated.returncode == 0, f"sidecar migrate: {migrated.stderr}")
            created = {}   # command group -> the id its create printed
            not_created = set()   # groups whose create was not run here
            for line in lines:
                written = re.sub(r"\s*\[[^\]]*\]", "", line)
                words = shlex.split(written)
                if words[0] == "sudo":
                    words = words[1:]
                reason = skip_reason(words, line)
                if not reason and words[1] in not_created and len(words) > 3 and words[3].isdigit():
                    reason = "acts on what a command not run here made"
                files = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--file"]
                if not reason and any(not os.path.exists(os.path.join(work, name)) for name in files):
                    reason = "reads a file the reader brings"
                if reason and len(words) > 2 and words[2] in ("add", "create"):
                    not_created.add(words[1])
                if reason:
                    skipped.setdefault(reason, []).append(f"{page}: {line[:70]}")
                    continue
                group = words[1]
                if group in created and len(words) > 3 and words[3].isdigit():
                    words[3] = created[group]
                done = subprocess.run([BIN, *words[1:]], input=PASSWORD * 2, capture_output=True, text=True, cwd=work,
                                      env=environment, timeout=120)
                ran += 1
                if done.returncode != 0:
                    problems.append(f"{page}: `{line}` exited {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}")
                    continue
                made = re.search(r"\bcreated (?:draft )?(?:alert|API key|service principal|study|survey|source)\D*?(\d+)",
                                 done.stdout + done.stderr)
                if made and len(words) > 2 and words[2] == "create":
                    created[group] = made.group(1)
    finally:
        upstream.kill()
        for work in works:
            shutil.rmtree(work, ignore_errors=True)
    check(not problems, "documented commands that fail as written:\n  " + "\n  ".join(problems))
    check(ran >= 15, f"only {ran} documented commands ran")
    summary = "; ".join(f"{len(lines)} {reason}" for reason, lines in sorted(skipped.items()))
    print(f"docs: {ran} documented sidecar commands ran as written and succeeded; not run here: {summary}")


main()
