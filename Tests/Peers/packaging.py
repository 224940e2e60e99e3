#!/usr/bin/env python3
"""Checks the deployment files in deploy/ against the real binary.

    packaging.py BIN [systemd|nginx|docker ...]

  systemd  the unit passes `systemd-analyze verify`, keeps its hardening, and
           the binary serves under MemoryDenyWriteExecute='s rule
  nginx    the real nginx runs the sample in front of the binary: TLS, HTTP/2,
           the redirect, per-client throttles a forged X-Forwarded-For cannot escape
  docker   the runtime stage installs a package for every library the binary
           links, runs unprivileged, ships no compilers (the image is not built)
"""
import ctypes
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_support import check, fail, free_port, read  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
BIN = os.path.abspath(sys.argv[1])
CHECKS = sys.argv[2:] or ["systemd", "nginx", "docker"]
HOST = "sidecar.example.org"
REGISTER = "/api/v2/regions/1/push_registrations"




def start_sidecar(work, processes, *flags, preexec_fn=None):
    """Starts `BIN serve` on a free loopback port; returns (port, log path)."""
    log = os.path.join(work, "sidecar.log")
    with open(log, "w") as out:
        processes.append(subprocess.Popen(
            [BIN, "serve", "--host", "127.0.0.1", "--port", "0", "--database", os.path.join(work, "x.sqlite3"), *flags],
            stdout=out, stderr=out, preexec_fn=preexec_fn))
    deadline = time.monotonic() + 120  # only catches a hang: the loop ends at the event
    while time.monotonic() < deadline:
        match = re.search(r"sidecar listening.* port=(\d+)", read(log))
        if match:
            return int(match.group(1)), log
        check(processes[-1].poll() is None, f"the sidecar exited:\n{read(log)}")
        time.sleep(0.05)
    fail(f"the sidecar did not start:\n{read(log)}")


def plain_request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    result = response.status, dict(response.getheaders()), response.read()
    conn.close()
    return result


# MARK: systemd

def check_systemd(work, processes):
    unit = read(os.path.join(DEPLOY, "sidecar.service"))
    lines = {line.strip() for line in unit.splitlines()}
    for directive in ["DynamicUser=yes", "StateDirectory=sidecar", "ProtectSystem=strict", "ProtectHome=yes",
                      "PrivateTmp=yes", "PrivateDevices=yes", "NoNewPrivileges=yes", "CapabilityBoundingSet=",
                      "MemoryDenyWriteExecute=yes", "SystemCallFilter=@system-service", "Restart=on-failure",
                      "UMask=0077", "Environment=SIDECAR_DATABASE=/var/lib/sidecar/sidecar.sqlite3",
                      "EnvironmentFile=-/etc/sidecar/sidecar.env", "WantedBy=multi-user.target"]:
        check(directive in lines, f"sidecar.service lacks {directive}")
    # SIGKILL must not come before the server's own 10 s shutdown timeout is up.
    stop = re.search(r"^TimeoutStopSec=(\d+)s?$", unit, re.M)
    check(stop and int(stop.group(1)) > 10, "TimeoutStopSec= must exceed the 10 s --shutdown-timeout")
    check(shutil.which("systemd-analyze"), "systemd-analyze is missing (script/peer-checks installs systemd)")

    # verify insists that ExecStart's binary exists: point it at BIN.
    check("\nExecStart=/usr/local/bin/sidecar serve\n" in unit, "ExecStart is not /usr/local/bin/sidecar serve")
    copy = os.path.join(work, "sidecar.service")
    with open(copy, "w") as f:
        f.write(unit.replace("\nExecStart=/usr/local/bin/sidecar ", f"\nExecStart={BIN} "))
    result = subprocess.run(["systemd-analyze", "verify", copy], capture_output=True, text=True)
    # The host's other units may draw warnings; only ours matter.
    ours = [l for l in (result.stdout + result.stderr).splitlines() if "sidecar.service" in l]
    check(result.returncode == 0 and not ours, f"systemd-analyze verify:\n{result.stdout}{result.stderr}")
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", copy], capture_output=True, text=True)
    score = re.search(r"Overall exposure level for sidecar\.service: ([\d.]+)", result.stdout)
    check(score, f"systemd-analyze security:\n{result.stdout}{result.stderr}")
    # 1.6 when written; fail on a regression rather than on a new systemd's re-weighting.
    check(float(score.group(1)) <= 2.5, f"exposure rose to {score.group(1)}")
    print(f"systemd: systemd-analyze verify accepts sidecar.service; hardening present; "
          f"offline exposure {score.group(1)} (<= 2.5); TimeoutStopSec={stop.group(1)}s > 10 s")

    # MemoryDenyWriteExecute= forbids writable+executable memory. The kernel's
    # PR_SET_MDWE (Linux 6.3) enforces the same rule, inherited across exec.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(66, 0, 0, 0, 0) < 0:  # PR_GET_MDWE
        print("systemd: MemoryDenyWriteExecute not exercised (kernel without PR_SET_MDWE)")
        return
    def lock():
        if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_MDWE)")
    port, _ = start_sidecar(work, processes, preexec_fn=lock)
    check(plain_request(port, "GET", "/healthz")[0] == 200, "/healthz failed under PR_SET_MDWE")
    status = plain_request(port, "POST", REGISTER, "token=mdwe-token-01&operating_system=ios",
                           {"Content-Type": "application/x-www-form-urlencoded"})[0]
    check(status == 204, f"a registration under PR_SET_MDWE answered {status}")
    print("systemd: under PR_SET_MDWE (MemoryDenyWriteExecute's rule) the binary serves /healthz 200 and stores a registration (204)")


# MARK: nginx

def render_site(work, ports, cert, key):
    """The sample with its literal deployment values swapped for test ones."""
    site = read(os.path.join(DEPLOY, "nginx-sidecar.conf"))
    replacements = [  # (literal in the sample, test value)
        ("listen 80;", f"listen 127.0.0.1:{ports['http']};"),
        ("listen 443 ssl http2;", f"listen 127.0.0.1:{ports['https']} ssl http2;"),
        ("server 127.0.0.1:8080;", f"server 127.0.0.1:{ports['sidecar']};"),
        (f"/etc/letsencrypt/live/{HOST}/fullchain.pem", cert),
        (f"/etc/letsencrypt/live/{HOST}/privkey.pem", key),
        ("root /var/www/html;", f"root {work};"),
    ]
    for literal, value in replacements:
        check(site.count(literal) == 1, f"nginx-sidecar.conf: expected `{literal}` once")
        site = site.replace(literal, value)
    # The IPv6 listeners are dropped: test hosts may lack IPv6 loopback.
    ipv6 = [l for l in site.splitlines() if l.strip().startswith("listen [::]:")]
    check(len(ipv6) == 2, "nginx-sidecar.conf: expected two `listen [::]:` lines")
    return "\n".join(l for l in site.splitlines() if l not in ipv6) + "\n"


def check_nginx(work, processes):
    import trustme  # from the peer venv
    check(shutil.which("nginx"), "nginx is missing (script/peer-checks installs it)")
    os.chmod(work, 0o755)  # nginx as root runs its workers as nobody
    ca, cert, key = trustme.CA(), os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    server_cert = ca.issue_cert(HOST)
    server_cert.private_key_pem.write_to_path(key)
    server_cert.cert_chain_pems[0].write_to_path(cert)

    ports = {"http": free_port(), "https": free_port()}
    ports["sidecar"], log = start_sidecar(work, processes, "--trusted-proxies", "127.0.0.1",
                                          "--push-registration-limit", "3")
    with open(os.path.join(work, "site.conf"), "w") as f:
        f.write(render_site(work, ports, cert, key))
    temp = " ".join(f"{kind}_temp_path {work}/{kind};" for kind in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"])
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"worker_processes 1;\npid {work}/nginx.pid;\nerror_log {work}/error.log warn;\n"
                f"events {{ worker_connections 128; }}\n"
                f"http {{\n  access_log {work}/access.log;\n  {temp}\n  include {work}/site.conf;\n}}\n")
    with open(f"{work}/error.log", "a") as errors:  # also what nginx says before it reads the config
        processes.append(subprocess.Popen(["nginx", "-e", f"{work}/error.log", "-c", conf, "-g", "daemon off;"],
                                          stdout=errors, stderr=errors))
    deadline = time.monotonic() + 120  # only catches a hang: the loop ends at the event
    while time.monotonic() < deadline:
        check(processes[-1].poll() is None, f"nginx exited ({processes[-1].returncode}):\n{read(work + '/error.log')}")
        try:
            socket.create_connection(("127.0.0.1", ports["https"]), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        fail(f"nginx did not listen:\n{read(work + '/error.log')}")

    context = ssl.create_default_context()
    ca.configure_trust(context)  # verifies the chain and the name sidecar.example.org

    class Connection(http.client.HTTPSConnection):
        """TCP to nginx's loopback port, TLS with the public name (SNI)."""
        def connect(self):
            http.client.HTTPConnection.connect(self)
            self.sock = context.wrap_socket(self.sock, server_hostname=HOST)

    def request(source, method, path, body=None, headers=None):
        conn = Connection("127.0.0.1", ports["https"], timeout=60, source_address=(source, 0))
        conn.request(method, path, body=body, headers={"Host": HOST, **(headers or {})})
        status = conn.getresponse().status
        conn.close()
        return status

    tokens = iter(range(1000))
    def register(source, forwarded=None):
        headers = {"Content-Type": "application/x-www-form-urlencoded", **({"X-Forwarded-For": forwarded} if forwarded else {})}
        return request(source, "POST", REGISTER, f"token=0a0b{next(tokens):04d}&operating_system=ios", headers)

    check(request("127.0.0.2", "GET", "/healthz") == 200, "/healthz through nginx")
    alpn = ssl.create_default_context()
    ca.configure_trust(alpn)
    alpn.set_alpn_protocols(["h2", "http/1.1"])
    with alpn.wrap_socket(socket.create_connection(("127.0.0.1", ports["https"])), server_hostname=HOST) as tls:
        negotiated, version = tls.selected_alpn_protocol(), tls.version()
    check(negotiated == "h2", f"nginx offered {negotiated}, not HTTP/2")
    print(f"nginx: TLS ({version}) verified against the test CA for {HOST} via SNI; HTTP/2 offered by ALPN; /healthz 200 through the proxy")

    status, headers, _ = plain_request(ports["http"], "GET", "/api/v1/regions/1/alerts", headers={"Host": HOST})
    location = headers.get("Location")
    check(status == 301 and location == f"https://{HOST}/api/v1/regions/1/alerts", f"port 80 answered {status} {location}")
    print(f"nginx: plain HTTP answers 301 -> {location}")

    # The limiter counts in aligned one-minute windows: start the bursts early
    # in a window so none straddles a boundary and gets a fresh allowance.
    if time.time() % 60 > 45:
        time.sleep(60 - time.time() % 60 + 0.5)
    first = [register("127.0.0.2") for _ in range(4)]
    second = [register("127.0.0.3") for _ in range(3)]
    # Forged headers: another address, a trusted proxy's, garbage, a chain.
    forged = ["1.2.3.4", "127.0.0.1", "not-an-address", "5.6.7.8, 127.0.0.1"]
    spoofer = [register("127.0.0.4", value) for value in forged]
    check(first == [204, 204, 204, 429], f"127.0.0.2 got {first}")
    check(second == [204, 204, 204], f"127.0.0.3 got {second}")
    check(spoofer == [204, 204, 204, 429], f"127.0.0.4 with forged X-Forwarded-For got {spoofer}")
    time.sleep(0.3)  # the request lines are logged after the answers
    lines = [l for l in read(log).splitlines() if "route=/api/v2/regions/:region/push_registrations" in l]
    clients = lambda status: sorted(re.search(r"client=(\S+)", l).group(1) for l in lines if f"status={status}" in l)
    check(clients(429) == ["127.0.0.2", "127.0.0.4"], f"429s logged for {clients(429)}")
    check(set(clients(204)) == {"127.0.0.2", "127.0.0.3", "127.0.0.4"}, f"204s logged for {set(clients(204))}")
    print(f"nginx: 3/minute through the proxy: 127.0.0.2 {first}, 127.0.0.3 {second} (its own bucket), "
          f"127.0.0.4 forging X-Forwarded-For {spoofer}; the sidecar logged its 429s for client=127.0.0.2 and client=127.0.0.4 only")


# MARK: docker

# Packages debian:bookworm-slim always has (Essential or priority required,
# or pulled in by apt itself): the runtime stage need not name them.
IN_BASE_IMAGE = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblzma5", "libselinux1"}
BUILD_TOOLS = {"gcc", "g++", "cpp", "clang", "make", "build-essential", "binutils", "pkg-config", "swiftlang"}


def dockerfile_stages(text):
    """[(FROM argument, [(INSTRUCTION, arguments)])], continuations joined."""
    stages, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # comments may sit inside a continued RUN as well
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        instruction, _, arguments = (pending + line).partition(" ")
        pending = ""
        if instruction.upper() == "FROM":
            stages.append((arguments.split()[0], []))
        stages[-1][1].append((instruction.upper(), arguments.strip()))
    return stages


def apt_installs(stage):
    packages = []
    for instruction, arguments in stage:
        for command in re.split(r"&&|;", arguments) if instruction == "RUN" else []:
            if "apt-get install" in command:
                words = command.split("apt-get install", 1)[1].split()
                packages += [w for w in words if not w.startswith("-")]
    return packages


def debian_package(path):
    """The package owning a library (dpkg knows /lib or /usr/lib, and the real file or the link)."""
    real = os.path.realpath(path)
    for candidate in dict.fromkeys([path, real, real.removeprefix("/usr"), "/usr" + path]):
        result = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if result.returncode == 0:
            return result.stdout.split(":")[0].split(",")[0].strip()
    fail(f"no Debian package owns {path}")


def check_docker(work, processes):
    stages = dockerfile_stages(read(os.path.join(DEPLOY, "Dockerfile")))
    check(len(stages) >= 2, "the Dockerfile is not multi-stage")
    (build_image, build), (runtime_image, runtime) = stages[0], stages[-1]
    check(build_image.startswith("swift:") and runtime_image == "debian:bookworm-slim", f"stages {build_image}, {runtime_image}")
    check(any("swift build" in a and "--static-swift-stdlib" in a for i, a in build if i == "RUN"),
          "the build stage does not link the Swift runtime statically")
    installed = apt_installs(runtime)

    # Every library the loader maps (ldd), by package. The Swift toolchain's
    # runtime (libswiftCore.so and co., dynamic in a debug build) is no
    # Debian package; --static-swift-stdlib puts it into the release binary.
    ldd = subprocess.run(["ldd", BIN], capture_output=True, text=True, check=True).stdout
    check("not found" not in ldd, f"ldd cannot find a library:\n{ldd}")
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    swift = [name for name, path in paths.items() if "/lib/swift/" in path]
    owners = {name: debian_package(path) for name, path in paths.items() if name not in swift}
    # The binary's own (DT_NEEDED) libraries must be named in the stage...
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]",
                        subprocess.run(["readelf", "-d", BIN], capture_output=True, text=True, check=True).stdout)
    required = {owners[n]: n for n in reversed(needed) if n in owners and owners[n] not in IN_BASE_IMAGE}
    missing = sorted(set(required) - set(installed))
    check(not missing, f"the runtime stage does not install {missing} (for {[required[p] for p in missing]})")
    # ...and theirs must come with those packages' dependencies.
    closure = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                              "--no-breaks", "--no-replaces", "--no-enhances", *installed],
                             capture_output=True, text=True, check=True).stdout
    closure = {line.strip() for line in closure.splitlines() if not line.startswith(" ")} | IN_BASE_IMAGE
    stray = {n: p for n, p in owners.items() if p not in closure}
    check(not stray, f"libraries from packages the image would lack: {stray}")

    unknown = [p for p in installed if subprocess.run(["apt-cache", "show", "--no-all-versions", p],
                                                      capture_output=True).returncode != 0]
    check(not unknown, f"apt knows no package {unknown}")
    tools = [p for p in installed if p.endswith("-dev") or p in BUILD_TOOLS]
    check(not tools, f"the runtime stage installs build tools {tools}")
    last = lambda name: [a for i, a in runtime if i == name][-1:] or [None]
    user = last("USER")[0]
    check(user and user.split(":")[0] not in ("root", "0"), f"the runtime stage runs as {user}")
    health = last("HEALTHCHECK")[0]
    check(health and '"/usr/local/bin/sidecar", "healthcheck"' in health, f"HEALTHCHECK {health}")
    check(last("VOLUME")[0], "no VOLUME")
    check(last("ENTRYPOINT")[0] == '["/usr/local/bin/sidecar"]', "ENTRYPOINT is not the sidecar binary")
    check(".build" in read(os.path.join(DEPLOY, "Dockerfile.dockerignore")).split(), "the build context would carry .build")
    print(f"docker: the runtime stage installs {', '.join(f'{p} ({s})' for p, s in sorted(required.items()))} "
          f"for the binary's own libraries, and their dependencies bring the packages of all {len(owners)} libraries "
          f"ldd lists ({len(swift)} Swift runtime libraries skipped: static with --static-swift-stdlib); "
          f"all {len(installed)} packages exist in Debian")
    print(f"docker: runtime runs as USER {user}, HEALTHCHECK {health.split('CMD', 1)[1].strip()}, "
          f"VOLUME {last('VOLUME')[0]}, no compilers or -dev packages")


if __name__ == "__main__":
    for name in CHECKS:
        check(name in ("systemd", "nginx", "docker"), f"unknown check {name}")
        work, processes = tempfile.mkdtemp(prefix=f"sidecar-{name}-"), []
        try:
            globals()[f"check_{name}"](work, processes)
        finally:
            for process in reversed(processes):
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            shutil.rmtree(work, ignore_errors=True)
