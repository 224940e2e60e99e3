import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// `sidecar doctor --as-service`: the unit's view. Each file the service
/// reads must be readable by the service's user (a `DynamicUser=` owns
/// nothing), not hidden by `ProtectHome=` or `PrivateTmp=`, and each
/// credential's source must exist (systemd refuses to start without it).
extension Doctor {
    /// The file-valued settings checked, with what the service does to them.
    static let serviceFileFlags: [(flag: String, what: String)] = [
        ("oba-api-key-file", "the OneBusAway key"), ("oba-region-api-keys-file", "the per-region OneBusAway keys"),
        ("pirate-weather-key-file", "the Pirate Weather key"), ("stripe-secret-key-file", "the Stripe key"),
        ("stripe-test-secret-key-file", "the Stripe test key"), ("gorush-webhook-secret-file", "the gorush webhook secret"),
        ("apns-key-file", "the APNs key"), ("apns-ca-file", "the APNs CA bundle"), ("fcm-service-account", "the FCM service account"),
        ("regions", "the regions directory"),
    ]

    static func serviceChecks(
        _ configuration: SidecarConfiguration, service: ServiceInvocation, unit: ServiceUnit,
        facts: (String) -> ServiceAccess.FileFacts? = ServiceAccess.facts(of:), isRoot: Bool = geteuid() == 0
    ) -> [Check] {
        var checks: [Check] = []
        let identity = ServiceAccess.identity(of: unit)
        let who = unit.dynamicUser ? "a dynamic user" : unit.user.map { "User=\($0)" } ?? "root"
        let files = unit.environmentFiles.map { ($0.optional ? "-" : "") + $0.path }
        checks.append(
            .ok(
                "service unit",
                "\(unit.files.joined(separator: " + ")): runs as \(who)"
                    + (unit.statePaths.isEmpty ? "" : ", state in \(unit.statePaths.joined(separator: ", "))")
                    + (files.isEmpty ? "" : ", environment from \(files.joined(separator: ", "))")
                    + ", \(unit.credentials.count) credential\(unit.credentials.count == 1 ? "" : "s"); the shell's SIDECAR_* are ignored"))
        if !unit.dynamicUser && unit.user == nil {
            checks.append(
                .warning(
                    "service user", "the unit runs the server as root", fix: "DynamicUser=yes, as deploy/sidecar.service has"))
        } else if identity == nil {
            checks.append(
                .failed(
                    "service user", "User=\(unit.user ?? "") does not exist on this host", fix: "create the user, or use DynamicUser=yes"))
        }
        for (id, source) in unit.credentials {
            let name = "credential"
            guard let found = facts(source) else {
                checks.append(
                    .failed(
                        name, "LoadCredential=\(id):\(source): \(source) does not exist, so systemd would not start the service",
                        fix: "install -m 0600 YOUR-FILE \(source), or remove the line (sudo script/install --credentials rewrites them)"))
                continue
            }
            if found.isDirectory {
                checks.append(.failed(name, "LoadCredential=\(id):\(source) is a directory", fix: "name the file itself"))
            } else if !isRoot {
                checks.append(
                    .warning(name, "\(id) from \(source): exists; systemd reads it as root", fix: "run doctor with sudo to read it as systemd does"))
            } else if access(source, R_OK) != 0 {
                checks.append(.failed(name, "\(id) from \(source): unreadable even as root", fix: "check the file"))
            } else {
                let known = CommandLineInterface.credentialFlags.first { $0.credential == id }.map { " (sets --\($0.flag))" } ?? ""
                checks.append(.ok(name, "\(id) from \(source)\(known)"))
            }
        }
        for (flag, what) in serviceFileFlags {
            guard let path = service.setting(flag), !path.hasPrefix("http://"), !path.hasPrefix("https://") else { continue }
            if service.credential(for: path) != nil { continue }
            let absolute = unit.absolute(path)
            checks.append(
                accessCheck(
                    "service reads", "--\(flag) \(absolute) (\(what))",
                    ServiceAccess.read(absolute, unit: unit, identity: identity ?? .dynamic, facts: facts),
                    fix: credentialFix(flag: flag, path: absolute)))
        }
        if !configuration.usesPostgreSQL {
            let database = unit.absolute(configuration.database)
            let directory = directoryOf(database)
            let verdict = ServiceAccess.write(directory, unit: unit, identity: identity ?? .dynamic, facts: facts)
            if verdict == .reachable && ServiceAccess.under(directory, unit.statePaths) && facts(directory) == nil {
                checks.append(.ok("service writes", "\(database): systemd creates \(directory) (StateDirectory=) at the first start"))
            } else {
                checks.append(
                    accessCheck(
                        "service writes", "\(directory) (the database's directory)", verdict,
                        fix: "keep --database in the state directory \(unit.statePaths.first ?? "/var/lib/sidecar") (StateDirectory=)"))
            }
        }
        return checks
    }

    /// One line for a verdict.
    static func accessCheck(_ name: String, _ subject: String, _ verdict: ServiceAccess.Verdict, fix: String) -> Check {
        switch verdict {
        case .reachable: return .ok(name, "\(subject): reachable by the service")
        case .missing: return .failed(name, "\(subject): does not exist", fix: fix)
        case .denied(let component, let found):
            return .failed(name, "\(subject): the service's user cannot pass \(component) (\(ServiceAccess.describe(found)))", fix: fix)
        case .hidden(let reason): return .failed(name, "\(subject): \(reason)", fix: fix)
        case .readOnly(let reason): return .failed(name, "\(subject): \(reason)", fix: fix)
        }
    }

    /// How to hand a file over instead: as a systemd credential.
    static func credentialFix(flag: String, path: String) -> String {
        guard let credential = CommandLineInterface.credentialFlags.first(where: { $0.flag == flag })?.credential else {
            return "make \(path) readable by every user (it holds no secret), or move it beside the unit's other files in /etc/sidecar"
        }
        return "hand it over as a credential: sudo install -m 0600 \(path) /etc/sidecar/credentials/\(credential), "
            + "drop SIDECAR_\(flag.uppercased().replacingOccurrences(of: "-", with: "_")) and run sudo script/install --credentials"
    }
}

extension ServiceInvocation {
    /// A flag's value as the command sees it: the command line's last,
    /// else its `SIDECAR_*` variable, else the credential of its name.
    func setting(_ flag: String) -> String? {
        var value: String?
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--\(flag)", index + 1 < arguments.count {
                value = arguments[index + 1]
                index += 1
            } else if word.hasPrefix("--\(flag)=") {
                value = String(word.dropFirst(flag.count + 3))
            }
            index += 1
        }
        if let value { return value }
        let variable = "SIDECAR_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
        if let set = environment[variable]?.presence { return set }
        return CommandLineInterface.credentialSettings(environment: environment).first { $0.flag == flag }?.path
    }
}
