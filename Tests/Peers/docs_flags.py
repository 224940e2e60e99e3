#!/usr/bin/env python3
"""The docs say what the binary does: every flag and default they state is held
against the binary's own --help.

    docs_flags.py BIN

Reads README.md and docs/*.md, and the help of every command the binary lists
(`sidecar --help`, `sidecar COMMAND --help`, `sidecar COMMAND SUB --help`). Then:

  1. The operator guide's configuration table: every row's flags are serve's,
     with the environment variable and the default `sidecar serve --help` names,
     and every flag of `serve --help` has a row (a flag added to the binary
     without a line in the docs fails here).
  2. Every `sidecar ...` command line in the docs (code blocks and inline code)
     uses only flags that command's help names.
  3. Every flag written in inline code anywhere in the docs is a flag of some
     command (of the script it follows, for `script/...`), or one of the other
     tools' flags listed below.
  4. A sentence that gives a flag a default, "`--flag` ... (default N)", gives
     the default the help gives.
"""
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_support import check, read  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = sys.argv[1]

# Flags of other programs the docs quote (swift, wrk, curl, docker, pg_dump,
# systemd, nginx, the relay client written to the seed, ...): not ours to check.
OTHER_TOOLS_FLAGS = {
    "--product", "--static-swift-stdlib", "--skip-build", "--filter", "--build-tests", "--in-place", "--recursive", "--strict",
    "--format", "--file", "--name", "--stop-timeout", "--env-file", "--mount", "--now", "--only", "--version", "--help",
    "--data-binary", "--data", "--header", "--request", "--user", "--latency", "--timeout", "--connections", "--threads",
    "--duration", "--script", "--rm", "--network", "--volume", "--publish", "--detach", "--no-cache", "--dbname",
    "--clean", "--if-exists", "--single-transaction", "--no-owner", "--jobs", "--compress", "--location", "--fail",
    "--silent", "--show-error", "--output", "--max-time", "--cacert", "--http2", "--create", "--extract", "--gzip",
    "--list", "--verbose", "--quiet", "--yes", "--tail", "--follow", "--since", "--unit", "--system", "--no-pager",
    "--lines", "--output-format", "--json", "--cert", "--key", "--insecure", "--proxy", "--resolve", "--interval",
    "--webroot", "--echo-upload",
}


def help_text(args):
    done = subprocess.run([BIN, *args, "--help"], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def options(text):
    """flag -> (environment variable or None, default or None), from a help's option lines."""
    found = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^  (--[a-z0-9-]+)\b", line)
        if not match:
            continue
        body = []
        for following in lines[index + 1:]:
            if re.match(r"^  --", following) or not following.startswith("      "):
                break
            body.append(following.strip())
        description = " ".join(line for line in body if not line.startswith("env: "))
        environment = next((line[5:].strip() for line in body if line.startswith("env: ")), None)
        default = re.search(r"\(default ([^()]*(?:\([^()]*\)[^()]*)*)\)", description)
        found[match.group(1)] = (environment, default.group(1).strip() if default else None)
    return found


def mentioned_flags(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


# ---- the binary's commands and their flags
TOP = help_text([])
COMMANDS = sorted(set(re.findall(r"^  sidecar ([a-z][a-z-]*)", TOP, re.M)))
check(len(COMMANDS) >= 15, f"sidecar --help lists only {COMMANDS}")
SERVE = help_text(["serve"])
SERVE_OPTIONS = options(SERVE)
check(len(SERVE_OPTIONS) >= 50, f"serve --help has only {len(SERVE_OPTIONS)} flags")
HELP = {}          # (command, sub or "") -> every flag its help names
SUBCOMMANDS = {}
for command in COMMANDS:
    text = help_text([command])
    subs = sorted(set(re.findall(rf"^  sidecar {command} ([a-z][a-z-]*)", text, re.M)))
    SUBCOMMANDS[command] = subs
    shares_serve = "serve's flags" in text or command in ("serve", "migrate")
    HELP[(command, "")] = mentioned_flags(text) | (set(SERVE_OPTIONS) if shares_serve else set())
    for sub in subs:
        sub_text = help_text([command, sub])
        HELP[(command, sub)] = mentioned_flags(sub_text) | HELP[(command, "")]
ALL_FLAGS = set().union(*HELP.values())
ALL_OPTIONS = {}
for command in COMMANDS:
    for flag, value in options(help_text([command])).items():
        ALL_OPTIONS.setdefault(flag, set()).add(value[1])

# ---- the docs
PAGES = {"README.md": read(os.path.join(ROOT, "README.md"))}
for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
    if name.endswith(".md"):
        PAGES[f"docs/{name}"] = read(os.path.join(ROOT, "docs", name))
problems = []


def plain(cell):
    return cell.replace("`", "").strip()


def agrees(stated, helped):
    """A default as the docs state it against the help's: the same, or the
    help's first words when it goes on to list what they are ("23 languages:
    es,...", "the number of cores: 2 here")."""
    stated, helped = plain(stated), plain(helped)
    return stated == helped or helped.startswith(stated + ":")


# 1. The configuration table against serve --help.
guide = PAGES["docs/operator-guide.md"]
table = re.search(r"^\| Flag \| Environment \| Default \| Meaning \|\n\|[-|]+\|\n((?:\|.*\n)+)", guide, re.M)
check(table is not None, "docs/operator-guide.md has no configuration table")
rows = [[cell.strip() for cell in row.strip().strip("|").split(" | ")] for row in table.group(1).splitlines()]
documented = set()
for flag_cell, environment_cell, default_cell, _ in rows:
    flags = re.findall(r"`(--[a-z0-9-]+)`", flag_cell)
    environments = re.findall(r"`([A-Z0-9_]+)`", environment_cell)
    check(flags and len(flags) == len(environments), f"a configuration row names flags {flags} and variables {environments}")
    for flag, environment in zip(flags, environments):
        documented.add(flag)
        if flag not in SERVE_OPTIONS:
            problems.append(f"operator guide: {flag} is not a flag of sidecar serve")
            continue
        help_environment, help_default = SERVE_OPTIONS[flag]
        if environment != help_environment:
            problems.append(f"operator guide: {flag} is read from {help_environment}, not {environment}")
        stated = plain(default_cell)
        if stated == "none":
            if help_default not in (None, "none"):
                problems.append(f"operator guide: {flag} says no default; serve --help says {help_default}")
        elif help_default is None or not agrees(stated, help_default):
            problems.append(f"operator guide: {flag} defaults to {stated!r}; serve --help says {help_default!r}")
for flag in sorted(set(SERVE_OPTIONS) - documented):
    if not flag.endswith("-file") or flag[:-5] not in documented:
        problems.append(f"operator guide: serve's {flag} has no row in the configuration table")


# 2. Each documented command line uses its command's flags.
def blocks_and_prose(text):
    """The lines of the page's code blocks, and its prose (the rest)."""
    code, prose, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            code.append(line.split(" # ")[0].split("  #")[0])
        else:
            prose.append(line)
    return code, "\n".join(prose)


def command_lines(text):
    code, prose = blocks_and_prose(text)
    yield from (line for line in code if line.strip() and not line.lstrip().startswith("#"))
    yield from re.findall(r"`([^`\n]+)`", prose)


checked_lines = 0
for page, text in PAGES.items():
    for line in command_lines(text):
        try:
            words = shlex.split(line.replace("[", " ").replace("]", " "))
        except ValueError:
            words = line.replace("[", " ").replace("]", " ").split()
        starts = [i for i, word in enumerate(words) if word in ("sidecar", "script/serve", "./script/serve") or word.endswith("/sidecar")]
        if not starts:
            continue
        start = starts[0]
        if words[start].endswith("script/serve"):
            command, rest = "serve", words[start + 1:]
        else:
            if start + 1 >= len(words) or words[start + 1] not in COMMANDS:
                continue
            command, rest = words[start + 1], words[start + 2:]
        first = rest[0].split("|")[0] if rest else ""
        sub = first if first in SUBCOMMANDS.get(command, []) else ""
        known = HELP[(command, sub)]
        checked_lines += 1
        for word in rest:
            if word.startswith("--"):
                flag = word.split("=", 1)[0].rstrip(".,;:)`'\"")
                if flag not in known and flag != "--help":
                    problems.append(f"{page}: `{line.strip()[:90]}` uses {flag}, which sidecar {command} {sub} --help does not name")
check(checked_lines >= 40, f"only {checked_lines} sidecar command lines found in the docs")

# 3. Every flag in inline code is someone's.
for page, text in PAGES.items():
    _, prose = blocks_and_prose(text)
    for span in re.findall(r"`([^`\n]+)`", prose):
        script = re.search(r"\bscript/([a-z-]+)", span)
        script_path = os.path.join(ROOT, "script", script.group(1)) if script else None
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", span):
            if script_path and os.path.isfile(script_path) and not span.lstrip("./").startswith("script/serve"):
                if flag not in read(script_path):
                    problems.append(f"{page}: `{span[:80]}` names {flag}, which script/{script.group(1)} does not read")
                continue
            if flag not in ALL_FLAGS and flag not in OTHER_TOOLS_FLAGS and not flag.startswith("--NAME"):
                problems.append(f"{page}: `{span[:80]}` names {flag}, which no sidecar command's help names")

# 4. Defaults stated in prose.
for page, text in PAGES.items():
    for flag, stated in re.findall(r"`(--[a-z0-9-]+)[^`]*`[^.;`]{0,60}?\(default ([^)]+)\)", text):
        helped = {plain(value) for value in ALL_OPTIONS.get(flag, set()) if value}
        if helped and not any(agrees(stated, value) for value in helped):
            problems.append(f"{page}: {flag} is said to default to {stated!r}; the help says {sorted(helped)}")

check(not problems, "the docs and --help disagree:\n  " + "\n  ".join(problems))
print(f"docs: {len(rows)} configuration rows match serve --help (flags, variables, defaults); {checked_lines} command lines "
      f"in {len(PAGES)} pages use only their command's flags; every flag in the docs is a sidecar flag or another tool's")
