/// The one reader of every command's arguments: `--name value`,
/// `--name=value`, switches (alone they mean true; `--switch false` states
/// a value), positional arguments, and `--help` anywhere.
struct ArgumentReader {
    /// What an option takes.
    enum Kind { case value, toggle }

    /// The options read, in order (an option may repeat; the caller decides
    /// whether that is allowed).
    var options: [(name: String, value: String)] = []
    var positional: [String] = []
    var wantsHelp = false

    /// The last value of an option.
    func value(_ name: String) -> String? { options.last { $0.name == name }?.value }

    /// Reads `arguments` for `command`, whose options are `known` (names
    /// without their dashes) and which takes up to `positionals` arguments.
    static func read(
        _ arguments: [String], command: String, known: [String: Kind],
        positionals: Int = 0
    ) throws(CommandLineError) -> ArgumentReader {
        var reader = ArgumentReader()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--help" || argument == "-h" {
                reader.wantsHelp = true
                return reader
            }
            guard argument.hasPrefix("--") else {
                guard reader.positional.count < positionals else { throw CommandLineError("unexpected argument '\(argument)'") }
                reader.positional.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let kind = known[name] else { throw CommandLineError("unknown flag --\(name) for '\(command)'") }
            if value == nil {
                switch kind {
                case .toggle:
                    if index < arguments.count, BooleanParameter.read(arguments[index]) != nil, !arguments[index].hasPrefix("-") {
                        value = arguments[index]
                        index += 1
                    } else {
                        value = "true"
                    }
                case .value:
                    guard index < arguments.count else { throw CommandLineError("--\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
            }
            reader.options.append((name, value ?? ""))
        }
        return reader
    }
}
