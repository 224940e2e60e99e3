import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Push

#if canImport(Glibc)
import Glibc
#endif

/// Who may act: admin API keys (`apikey`), service principals
/// (`principal`) and console accounts (`user`).
enum AccessCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "apikey create", id: nil, access: .writes,
            summary: "Create an admin API key (printed once on standard output, stored hashed)",
            options: [
                OperatorOption("name", "TEXT", required: true, "What the key is for, shown in lists and the audit log"),
                OperatorOption(
                    "region", "N|all", required: true, repeatable: true,
                    "A region the key may manage (repeat for more), or all for every region"),
                OperatorOption("push", nil, "The key may start sends"),
                OperatorOption("admin", nil, "The key may also create, list and revoke keys within its regions over the admin API"),
                OperatorOption("sources", nil, "The key may add, edit, poll and remove alert sources (others only read them)"),
            ],
            run: { c in
                guard let name = c.options["name"]?.presence else { throw AdministrationError.invalid(["--name is required"]) }
                let tooLong = FieldLimits.check([("--name", name, FieldLimits.name)])
                guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
                let regions = try regionList(c.options["region"], directory: c.regions)
                let (key, record) = try await ApiKeyStore(database: c.database).create(
                    name: name, regions: regions, canPush: c.options["push"] == "true", isAdmin: c.options["admin"] == "true",
                    canManageSources: c.options["sources"] == "true", actor: c.actor, now: c.now)
                await c.audit.record(
                    actor: c.actor, action: "apikey.create", regionID: Optional<Int>.none, target: "API key \(record.id)",
                    detail: "\(name); \(record.scopeDescription)", now: c.now)
                // The key alone on standard output: KEY=$(sidecar apikey create ...) reads it.
                c.errors("created API key \(record.id) (\(name), \(record.scopeDescription)). It is shown only now; store it safely:")
                c.output(key)
                return 0
            }),
        OperatorCommand(
            name: "apikey list", id: nil, access: .reads, summary: "List admin API keys", options: [],
            run: { c in
                for record in try await ApiKeyStore(database: c.database).list() {
                    let state = record.revokedAt == nil ? "active" : "revoked"
                    c.output(
                        "\(record.id)\t\(record.name)\t\(record.prefix)…\t\(state)\t\(record.scopeDescription)\tlast used \(record.lastUsedAt.map(OperatorCommands.format) ?? "never")"
                    )
                }
                return 0
            }),
        OperatorCommand(
            name: "apikey revoke", id: "ID", access: .changes, summary: "Revoke an admin API key by id", options: [],
            run: { c in
                guard let id = Int64(c.invocation.positional.first ?? ""),
                    try await ApiKeyStore(database: c.database).revoke(id: id, actor: c.actor, now: c.now)
                else {
                    throw AdministrationError.notFound("No active API key \(c.invocation.positional.first ?? "")")
                }
                await c.audit.record(actor: c.actor, action: "apikey.revoke", regionID: Optional<Int>.none, target: "API key \(id)", now: c.now)
                c.output("revoked API key \(id)")
                return 0
            }),
        OperatorCommand(
            name: "principal create", id: nil, access: .writes,
            summary: "Create a service principal: a deployment-wide credential that may only create, list and revoke region keys",
            options: [OperatorOption("name", "TEXT", required: true, "What it is for (your provisioning system), shown in lists and the audit log")],
            run: { c in
                guard let name = c.options["name"]?.presence else { throw AdministrationError.invalid(["--name is required"]) }
                let tooLong = FieldLimits.check([("--name", name, FieldLimits.name)])
                guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
                let (key, record) = try await c.keys.create(name: name, principal: true, actor: c.actor, now: c.now)
                await c.audit.record(
                    actor: c.actor, action: "principal.create", regionID: Optional<Int>.none, target: "principal \(record.id)", detail: name,
                    now: c.now)
                // The secret alone on standard output, as apikey create does.
                c.errors("created service principal \(record.id) (\(name)). It is shown only now; store it safely:")
                c.output(key)
                return 0
            }),
        OperatorCommand(
            name: "principal list", id: nil, access: .reads, summary: "List service principals", options: [],
            run: { c in
                for record in try await c.keys.list(principals: true) {
                    let state = record.revokedAt == nil ? "active" : "revoked"
                    c.output(
                        "\(record.id)\t\(record.name)\t\(record.prefix)…\t\(state)\tlast used \(record.lastUsedAt.map(OperatorCommands.format) ?? "never")"
                    )
                }
                return 0
            }),
        OperatorCommand(
            name: "principal revoke", id: "ID", access: .changes,
            summary: "Revoke a service principal by id, and every live key it made unless told to keep them",
            options: [OperatorOption("keep-keys", nil, "Leave the keys it made working (the default revokes them first)")],
            run: { c in
                // As the Go reference's runbook expects: a principal's keys go with it by default.
                let withKeys = c.options["keep_keys"] != "true"
                guard let id = Int64(c.invocation.positional.first ?? ""),
                    let revoked = try await c.keys.revokePrincipal(id: id, withKeys: withKeys, actor: c.actor, now: c.now)
                else {
                    throw AdministrationError.notFound("No active service principal \(c.invocation.positional.first ?? "")")
                }
                await c.audit.record(
                    actor: c.actor, action: "principal.revoke", regionID: Optional<Int>.none, target: "principal \(id)",
                    detail: withKeys ? "with its \(revoked.count) keys" : "its keys kept", now: c.now)
                if !revoked.isEmpty { c.output("revoked keys: " + revoked.map(String.init).joined(separator: ", ")) }
                c.output(
                    withKeys
                        ? "revoked service principal \(id) and the \(revoked.count) keys it made"
                        : "revoked service principal \(id); the keys it made still work (--keep-keys)")
                return 0
            }),
        OperatorCommand(
            name: "user create", id: nil, access: .writes,
            summary: "Create a console account; the password is read from standard input",
            options: [
                OperatorOption("email", "ADDRESS", required: true, "The account's email address (its sign-in name)"),
                OperatorOption("role", "admin|editor|viewer", required: true, "What it may do"),
                OperatorOption("region", "N", repeatable: true, "A region it may see (repeat for more; default every region)"),
            ],
            run: { c in
                let users = ConsoleStore(database: c.database)
                guard let email = ConsoleRules.normalizedEmail(c.options["email"] ?? "") else {
                    throw AdministrationError.invalid(["--email must be an email address"])
                }
                guard let role = ConsoleRole(rawValue: c.options["role"] ?? "") else {
                    throw AdministrationError.invalid(["--role must be admin, editor or viewer"])
                }
                let regions = try regionList(c.options["region"], directory: c.regions)
                let password = try readPassword(email: email, errors: c.errors)
                let user = try await users.createUser(
                    email: email, passwordHash: try PasswordHash.hash(password), role: role, regions: regions, now: c.now)
                await c.audit.record(
                    actor: c.actor, action: "user.create", regionID: Optional<Int>.none, target: "user \(email)",
                    detail: "role=\(role.rawValue); regions=\(regions.map { $0.sorted().map(String.init).joined(separator: ",") } ?? "all")",
                    now: c.now)
                c.output(
                    "created \(user.role.rawValue) \(user.email) (\(regions.map { "regions " + $0.sorted().map(String.init).joined(separator: ",") } ?? "all regions"))"
                )
                return 0
            }),
        OperatorCommand(
            name: "user list", id: nil, access: .reads, summary: "List console accounts", options: [],
            run: { c in
                for user in try await ConsoleStore(database: c.database).users() {
                    c.output(
                        "\(user.email)\t\(user.role.rawValue)\t\(user.regions.map { "regions " + $0.sorted().map(String.init).joined(separator: ",") } ?? "all regions")"
                    )
                }
                return 0
            }),
        OperatorCommand(
            name: "user passwd", id: nil, access: .changes,
            summary: "Set an account's password (read from standard input); its sessions end",
            options: [OperatorOption("email", "ADDRESS", required: true, "The account")],
            run: { c in
                guard let email = ConsoleRules.normalizedEmail(c.options["email"] ?? "") else {
                    throw AdministrationError.invalid(["--email is required"])
                }
                let users = ConsoleStore(database: c.database)
                guard try await users.credentials(email: email) != nil else { throw AdministrationError.notFound("No account \(email)") }
                let password = try readPassword(email: email, errors: c.errors)
                try await users.setPassword(email: email, passwordHash: try PasswordHash.hash(password), now: c.now)
                await c.audit.record(actor: c.actor, action: "user.passwd", regionID: Optional<Int>.none, target: "user \(email)", now: c.now)
                c.output("set the password of \(email); its sessions have ended")
                return 0
            }),
        OperatorCommand(
            name: "user delete", id: nil, access: .changes, summary: "Delete a console account and end its sessions",
            options: [OperatorOption("email", "ADDRESS", required: true, "The account")],
            run: { c in
                guard let email = ConsoleRules.normalizedEmail(c.options["email"] ?? "") else {
                    throw AdministrationError.invalid(["--email is required"])
                }
                do { try await ConsoleStore(database: c.database).deleteUser(email: email) } catch ConsoleStore.Failure.notFound {
                    throw AdministrationError.notFound("No account \(email)")
                }
                await c.audit.record(actor: c.actor, action: "user.delete", regionID: Optional<Int>.none, target: "user \(email)", now: c.now)
                c.output("deleted \(email)")
                return 0
            }),
    ]

    /// `--region 1 --region 3` (joined as `1,3`) as a set; nil when absent
    /// or `all` (every region). Each must be a region of the directory, as
    /// the admin API requires: a key or account for a region no app can
    /// reach is a typo, not a grant.
    static func regionList(_ text: String?, directory: RegionDirectory) throws(AdministrationError) -> Set<Int>? {
        guard let text, !text.isEmpty, text != "all" else { return nil }
        var regions = Set<Int>()
        for part in text.split(separator: ",") {
            guard let id = Int(String(part).trimmingWhitespace()), id >= 0 else {
                throw .invalid(["--region must be a region id (a number), repeated for more, or all alone"])
            }
            regions.insert(id)
        }
        let unknown = regions.filter { directory.region(id: $0) == nil }.sorted()
        guard unknown.isEmpty else {
            let known = directory.all.map { String($0.id) }.joined(separator: ", ")
            throw .invalid([
                "no region \(unknown.map(String.init).joined(separator: ", ")) in the regions directory (it has \(known.isEmpty ? "none" : known)); "
                    + "pass --regions PATH|URL (SIDECAR_REGIONS) as the server has it"
            ])
        }
        return regions
    }

    /// Reads a new password from standard input, never from the arguments
    /// (every local user can read those). On a terminal it asks twice
    /// without echo; otherwise it reads one line.
    static func readPassword(email: String, errors: @Sendable (String) -> Void) throws(AdministrationError) -> String {
        let password: String
        if isatty(STDIN_FILENO) == 1 {
            errors("Password for \(email) (at least \(ConsoleRules.minimumPasswordLength) characters): ")
            let first = readLineWithoutEcho() ?? ""
            errors("Again: ")
            guard readLineWithoutEcho() == first else { throw .invalid(["the two passwords differ"]) }
            password = first
        } else {
            password = readLine(strippingNewline: true) ?? ""
        }
        let problems = ConsoleRules.passwordProblems(password, email: email)
        guard problems.isEmpty else { throw .invalid(problems) }
        return password
    }

    static func readLineWithoutEcho() -> String? {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return readLine() }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            StandardErrorSink().write("")
        }
        return readLine(strippingNewline: true)
    }
}
