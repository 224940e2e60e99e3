import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// `--as-service [--unit PATH]` and `--env-file PATH`: a command (doctor,
/// migrate, an operator command) run with the configuration the installed
/// service gets instead of the shell's: the unit's `Environment=`, its
/// `EnvironmentFile=`s, its `ExecStart=` flags and its credentials. The
/// credentials appear in a private scratch directory that links each
/// `LoadCredential=` id to its source (systemd copies them the same way),
/// removed when the command ends.
struct ServiceInvocation: Sendable {
    /// The unit, when `--as-service` was given.
    let unit: ServiceUnit?
    /// The scratch credentials directory standing in for `%d`.
    let credentialsDirectory: String?
    /// The arguments the command is parsed from: the command, the unit's
    /// flags, then the operator's (which win).
    let arguments: [String]
    let environment: [String: String]

    /// Commands that take `--as-service` and `--env-file`.
    static func accepts(_ arguments: [String]) -> Bool {
        guard let first = arguments.first else { return false }
        return ["doctor", "migrate"].contains(first) || OperatorCommands.groups.contains(first) || OperatorCommands.named(first) != nil
    }

    /// Takes `--as-service`, `--unit PATH` and `--env-file PATH` out of the
    /// arguments and builds what the command runs with; nil when none was
    /// given (the command runs as typed).
    static func prepare(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> ServiceInvocation? {
        guard accepts(arguments) else { return nil }
        var rest: [String] = []
        var asService = false
        var unitPath: String?
        var environmentFiles: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            func value(_ flag: String) throws(CommandLineError) -> String {
                if argument.hasPrefix("--\(flag)=") { return String(argument.dropFirst(flag.count + 3)) }
                index += 1
                guard index < arguments.count, !arguments[index].hasPrefix("--") else { throw CommandLineError("--\(flag) needs a PATH") }
                return arguments[index]
            }
            if argument == "--as-service" || argument == "--as-service=true" {
                asService = true
            } else if argument == "--unit" || argument.hasPrefix("--unit=") {
                unitPath = try value("unit")
            } else if argument == "--env-file" || argument.hasPrefix("--env-file=") {
                environmentFiles.append(try value("env-file"))
            } else {
                rest.append(argument)
            }
            index += 1
        }
        if unitPath != nil && !asService { throw CommandLineError("--unit goes with --as-service") }
        guard asService || !environmentFiles.isEmpty else { return nil }
        var result = environment
        var unit: ServiceUnit?
        var credentials: String?
        if asService {
            let loaded = try ServiceUnit.load(path: unitPath ?? ServiceUnit.installedPath)
            let directory = try linkCredentials(loaded.credentials)
            do {
                // The service sees none of the shell's SIDECAR_* settings.
                result = environment.filter { !$0.key.hasPrefix("SIDECAR_") && $0.key != "CREDENTIALS_DIRECTORY" }
                for (name, value) in try loaded.serviceEnvironment(credentials: directory) { result[name] = value }
            } catch {
                remove(directory)
                throw error
            }
            unit = loaded
            credentials = directory
            // The unit's flags come right after the command (and its
            // subcommand), before the operator's.
            let head = rest.count > 1 && OperatorCommands.groups.contains(rest[0]) ? 2 : 1
            let flags = usableFlags(loaded.serveArguments, command: Array(rest.prefix(head)).joined(separator: " "))
            rest = Array(rest.prefix(head)) + flags + Array(rest.dropFirst(head))
        }
        for path in environmentFiles {
            guard let text = ServiceUnit.readText(path) else { throw CommandLineError("--env-file: cannot read \(path)") }
            for (name, value) in EnvironmentFile.parse(text) { result[name] = value }
        }
        return ServiceInvocation(unit: unit, credentialsDirectory: credentials, arguments: rest, environment: result)
    }

    /// The `ExecStart=` flags the command also takes (an operator command
    /// has no use for `--port`).
    static func usableFlags(_ flags: [String], command: String) -> [String] {
        let serveFlags = CommandLineInterface.flags(for: "serve")
        let taken: Set<String> =
            OperatorCommands.named(command).map { Set(CommandHelp.operatorFlags($0).map(\.name)) } ?? Set(serveFlags.map(\.name))
        var kept: [String] = []
        var index = 0
        while index < flags.count {
            let word = flags[index]
            let name = String(word.dropFirst(2).prefix { $0 != "=" })
            let isSwitch = serveFlags.first { $0.name == name }?.isSwitch ?? false
            let takesNext = word.hasPrefix("--") && !word.contains("=") && !isSwitch && index + 1 < flags.count
            let words = takesNext ? [word, flags[index + 1]] : [word]
            if taken.contains(name) { kept += words }
            index += words.count
        }
        return kept
    }

    /// A private directory with one link per credential, named by its id.
    static func linkCredentials(_ credentials: [(id: String, source: String)]) throws(CommandLineError) -> String {
        var template = Array((NSTemporaryDirectoryPath() + "sidecar-credentials-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CommandLineError("--as-service: cannot make a scratch directory for the unit's credentials")
        }
        let directory = String(cString: made)
        for (id, source) in credentials where !id.contains("/") {
            _ = symlink(source, directory + "/" + id)
        }
        return directory
    }

    static func remove(_ directory: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    /// Removes the scratch credentials directory.
    func finish() { credentialsDirectory.map(Self.remove) }

    /// The credential a path in the scratch directory stands for.
    func credential(for path: String) -> (id: String, source: String)? {
        guard let directory = credentialsDirectory, let unit, path.hasPrefix(directory + "/") else { return nil }
        let id = String(path.dropFirst(directory.count + 1))
        return unit.credentials.last { $0.id == id }
    }
}

private func NSTemporaryDirectoryPath() -> String {
    let base = ProcessInfo.processInfo.environment["TMPDIR"]?.presence ?? "/tmp"
    return base.hasSuffix("/") ? base : base + "/"
}
