import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 35: `doctor --as-service` reads what systemd gives the service
/// (the unit, its drop-ins, its environment files and credentials) and
/// checks every file as the service's user would reach it.
@Suite("Operations: the systemd unit as the service sees it", .enabled(if: TestBackend.isSQLite, "no storage: once, on the SQLite run"))
struct ServiceUnitTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func shipped(_ relative: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(relative), encoding: .utf8)
    }

    @Test("the shipped unit: a dynamic user, its state directory, the sample environment file, serve with no flags")
    func shippedUnit() throws {
        let unit = ServiceUnit.parse([("/etc/systemd/system/sidecar.service", try Self.shipped("deploy/sidecar.service"))])
        #expect(unit.dynamicUser)
        #expect(unit.stateDirectories == ["sidecar"])
        #expect(unit.environmentFiles.map(\.path) == ["/etc/sidecar/sidecar.env"])
        #expect(unit.environmentFiles.map(\.optional) == [true])
        #expect(unit.execStart == ["/usr/local/bin/sidecar", "serve"])
        #expect(unit.protectSystem == "strict" && unit.protectHome == "yes" && unit.privateTmp)
        #expect(unit.environment.first { $0.name == "SIDECAR_DATABASE" }?.value == "/var/lib/sidecar/sidecar.sqlite3")
        // The keys come as credentials, never as paths the service reads itself.
        #expect(unit.credentials.isEmpty)
        #expect(!unit.environment.contains { $0.name.hasSuffix("_FILE") })
    }

    @Test("unit syntax: quoted words, continuations, comments, drop-ins adding and clearing lists, specifiers")
    func syntax() {
        let unit = ServiceUnit.parse([
            (
                "/u/sidecar.service",
                """
                [Unit]
                Environment=IGNORED=1
                [Service]
                # a comment
                ; another
                Environment="SIDECAR_LOCALES=en,es" SIDECAR_PORT=9000
                Environment=SIDECAR_APNS_KEY_FILE=%d/apns-key \\
                  SIDECAR_HOST=127.0.0.1
                ExecStart=-/usr/local/bin/sidecar serve --port 9001 --demo
                LoadCredential=oba-api-key:/etc/sidecar/credentials/oba-api-key
                EnvironmentFile=/etc/sidecar/required.env
                """
            ),
            (
                "/u/sidecar.service.d/a.conf",
                """
                [Service]
                LoadCredential=
                LoadCredential=apns-key:/etc/sidecar/credentials/apns-key
                Environment=SIDECAR_PORT=9100
                User=transit
                """
            ),
        ])
        #expect(
            unit.environment.map { "\($0.name)=\($0.value)" } == [
                "SIDECAR_LOCALES=en,es", "SIDECAR_PORT=9000", "SIDECAR_APNS_KEY_FILE=%d/apns-key", "SIDECAR_HOST=127.0.0.1", "SIDECAR_PORT=9100",
            ])
        #expect(unit.credentials.map(\.id) == ["apns-key"])
        #expect(unit.execStart == ["/usr/local/bin/sidecar", "serve", "--port", "9001", "--demo"])
        #expect(unit.serveArguments == ["--port", "9001", "--demo"])
        #expect(unit.user == "transit" && !unit.dynamicUser)
        #expect(unit.environmentFiles.map(\.optional) == [false])
        #expect(unit.expand("%d/apns-key %n %N %S 100%%", credentials: "/run/c") == "/run/c/apns-key sidecar.service sidecar /var/lib 100%")
    }

    @Test("the service's environment: Environment=, then each EnvironmentFile= wins; a missing required file stops the start")
    func environment() throws {
        let unit = ServiceUnit.parse([
            (
                "/u/sidecar.service",
                """
                [Service]
                Environment=SIDECAR_PORT=8080 SIDECAR_PUBLIC_URL=http://x
                EnvironmentFile=-/e/optional-missing.env
                EnvironmentFile=/e/sidecar.env
                LoadCredential=apns-key:/k
                """
            )
        ])
        let files = ["/e/sidecar.env": "# settings\nSIDECAR_PORT=9090\nexport SIDECAR_REGIONS=\"/etc/sidecar/regions v3.json\"\n;x\nnot a line\n"]
        let environment = try unit.serviceEnvironment(credentials: "/c", read: { files[$0] })
        #expect(environment["SIDECAR_PORT"] == "9090")
        #expect(environment["SIDECAR_PUBLIC_URL"] == "http://x")
        #expect(environment["SIDECAR_REGIONS"] == "/etc/sidecar/regions v3.json")
        #expect(environment["CREDENTIALS_DIRECTORY"] == "/c")
        #expect(throws: CommandLineError.self) { try unit.serviceEnvironment(credentials: "/c", read: { _ in nil }) }
    }

    /// A file system: path → facts.
    static func files(_ entries: [String: ServiceAccess.FileFacts]) -> (String) -> ServiceAccess.FileFacts? { { entries[$0] } }
    static func directory(_ mode: UInt32, uid: UInt32 = 0, gid: UInt32 = 0) -> ServiceAccess.FileFacts {
        .init(uid: uid, gid: gid, mode: mode, isDirectory: true)
    }
    static func file(_ mode: UInt32, uid: UInt32 = 0, gid: UInt32 = 0) -> ServiceAccess.FileFacts {
        .init(uid: uid, gid: gid, mode: mode, isDirectory: false)
    }

    static let hardened = ServiceUnit.parse([
        ("/u/sidecar.service", "[Service]\nDynamicUser=yes\nStateDirectory=sidecar\nProtectSystem=strict\nProtectHome=yes\nPrivateTmp=yes\n")
    ])

    @Test(
        "what a dynamic user reaches",
        arguments: [
            // (path, file mode, directory mode, expected)
            ("/etc/sidecar/key", UInt32(0o644), UInt32(0o755), "reachable"),
            ("/etc/sidecar/key", 0o600, 0o755, "denied /etc/sidecar/key"),
            ("/etc/sidecar/key", 0o640, 0o755, "denied /etc/sidecar/key"),
            ("/etc/sidecar/key", 0o644, 0o700, "denied /etc/sidecar"),
            ("/etc/sidecar/key", 0o644, 0o711, "reachable"),
            ("/root/key", 0o644, 0o755, "hidden"),
            ("/home/ops/key", 0o644, 0o755, "hidden"),
            ("/tmp/key", 0o644, 0o777, "hidden"),
            ("/var/lib/sidecar/key", 0o600, 0o700, "reachable"),
            ("/etc/sidecar/absent", 0o644, 0o755, "missing"),
        ])
    func dynamicUserReads(path: String, fileMode: UInt32, directoryMode: UInt32, expected: String) {
        let parent = String(path[..<path.lastIndex(of: "/")!])
        var entries: [String: ServiceAccess.FileFacts] = ["/": Self.directory(0o755), "/etc": Self.directory(0o755)]
        entries[parent] = Self.directory(directoryMode)
        if !path.hasSuffix("absent") { entries[path] = Self.file(fileMode) }
        let verdict = ServiceAccess.read(path, unit: Self.hardened, identity: .dynamic, facts: Self.files(entries))
        switch verdict {
        case .reachable: #expect(expected == "reachable")
        case .missing: #expect(expected == "missing")
        case .denied(let component, _): #expect(expected == "denied \(component)")
        case .hidden: #expect(expected == "hidden")
        case .readOnly: Issue.record("a read is never read-only")
        }
    }

    @Test("a named user reads by owner and group bits; writes outside the state directory are read-only under ProtectSystem=strict")
    func namedUserAndWrites() {
        let entries: [String: ServiceAccess.FileFacts] = [
            "/": Self.directory(0o755), "/etc": Self.directory(0o755), "/etc/sidecar": Self.directory(0o750, gid: 50),
            "/etc/sidecar/key": Self.file(0o640, gid: 50), "/srv": Self.directory(0o755), "/srv/data": Self.directory(0o700, uid: 7),
        ]
        let inGroup = ServiceAccess.Identity.user(uid: 7, groups: [7, 50])
        let outside = ServiceAccess.Identity.user(uid: 8, groups: [8])
        #expect(ServiceAccess.read("/etc/sidecar/key", unit: Self.hardened, identity: inGroup, facts: Self.files(entries)) == .reachable)
        guard case .denied = ServiceAccess.read("/etc/sidecar/key", unit: Self.hardened, identity: outside, facts: Self.files(entries)) else {
            Issue.record("a user outside the group reads a 0640 file")
            return
        }
        guard case .readOnly = ServiceAccess.write("/srv/data", unit: Self.hardened, identity: inGroup, facts: Self.files(entries)) else {
            Issue.record("ProtectSystem=strict leaves /srv writable")
            return
        }
        var open = Self.hardened
        open.readWritePaths = ["/srv/data"]
        #expect(ServiceAccess.write("/srv/data", unit: open, identity: inGroup, facts: Self.files(entries)) == .reachable)
        #expect(ServiceAccess.write("/var/lib/sidecar", unit: Self.hardened, identity: .dynamic, facts: Self.files([:])) == .reachable)
    }

    @Test("credentials by name set the key flags, below SIDECAR_* and the command line")
    func credentialsByName() async throws {
        try await TemporaryDirectory.run("sidecar-credentials") { directory in
            try Data("from-credential\n".utf8).write(to: directory.appendingPathComponent("oba-api-key"))
            try Data("weather-credential".utf8).write(to: directory.appendingPathComponent("pirate-weather-key"))
            try Data("x".utf8).write(to: directory.appendingPathComponent("apns-key"))
            let environment = ["CREDENTIALS_DIRECTORY": directory.path, "SIDECAR_PIRATE_WEATHER_KEY": "from-environment"]
            guard case .serve(let configuration) = try CommandLineInterface.parse(["serve"], environment: environment) else {
                Issue.record("not serve")
                return
            }
            #expect(configuration.obaAPIKey == "from-credential")
            #expect(configuration.pirateWeatherKey == "from-environment")
            #expect(configuration.apnsKeyFile == directory.appendingPathComponent("apns-key").path)
            guard case .serve(let flagged) = try CommandLineInterface.parse(["serve", "--oba-api-key", "typed"], environment: environment) else {
                Issue.record("not serve")
                return
            }
            #expect(flagged.obaAPIKey == "typed")
        }
    }

    @Test("script/install writes LoadCredential= for exactly the credentials the server reads by name")
    func installKnowsTheCredentials() throws {
        let script = try Self.shipped("script/install")
        let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("KNOWN_CREDENTIALS=(") })
        let names = line.dropFirst("KNOWN_CREDENTIALS=(".count).dropLast().split(separator: " ").map(String.init)
        #expect(names == CommandLineInterface.credentialFlags.map(\.credential))
        let unit = try Self.shipped("deploy/sidecar.service")
        for name in names { #expect(unit.contains(name), "deploy/sidecar.service does not name the credential \(name)") }
    }

    @Test("doctor --as-service: the unit's settings, not the shell's; a root-only key file fails with the credential fix")
    func doctorAsService() async throws {
        try await TemporaryDirectory.run("sidecar-service") { directory in
            let base = directory.path
            try FileManager.default.createDirectory(atPath: base + "/credentials", withIntermediateDirectories: true)
            try Data("key-4711".utf8).write(to: URL(fileURLWithPath: base + "/credentials/oba-api-key"))
            let secret = base + "/apns.p8"
            try Data("x".utf8).write(to: URL(fileURLWithPath: secret))
            chmod(secret, 0o600)
            try Data("SIDECAR_DATABASE=\(base)/state/sidecar.sqlite3\nSIDECAR_PIRATE_WEATHER_KEY_FILE=\(secret)\n".utf8)
                .write(to: URL(fileURLWithPath: base + "/sidecar.env"))
            let unitPath = base + "/sidecar.service"
            try Data(
                """
                [Service]
                ExecStart=/usr/local/bin/sidecar serve --port 9123
                DynamicUser=yes
                StateDirectory=sidecar
                EnvironmentFile=\(base)/sidecar.env
                LoadCredential=oba-api-key:\(base)/credentials/oba-api-key
                """.utf8
            ).write(to: URL(fileURLWithPath: unitPath))
            let service = try #require(
                try ServiceInvocation.prepare(
                    ["doctor", "--as-service", "--unit", unitPath, "--offline"], environment: ["SIDECAR_PORT": "7777", "PATH": "/bin"]))
            defer { service.finish() }
            #expect(service.arguments == ["doctor", "--port", "9123", "--offline"])
            #expect(service.environment["SIDECAR_PORT"] == nil)
            guard case .doctor(let configuration, let offline) = try CommandLineInterface.parse(service.arguments, environment: service.environment)
            else {
                Issue.record("not doctor")
                return
            }
            #expect(offline && configuration.server.port == 9123 && configuration.obaAPIKey == "key-4711")
            let lines = Locked<[String]>([])
            let status = await Doctor.run(configuration, offline: true, service: service) { line in lines.withLock { $0.append(line) } }
            let output = lines.value.joined(separator: "\n")
            #expect(status == 1)
            #expect(output.contains("oba-api-key from \(base)/credentials/oba-api-key (sets --oba-api-key-file)"))
            #expect(output.contains("--pirate-weather-key-file \(secret) (the Pirate Weather key): the service's user cannot pass"))
            #expect(output.contains("/etc/sidecar/credentials/pirate-weather-key"))
            #expect(output.contains("does not exist yet; serve creates \(base)/state"))
            #expect(!output.contains("key-4711"))
        }
    }
}
