import GTFSRealtime

/// What `--help` says: the top-level list, each command's usage, and every
/// flag with the default the configuration itself holds.
enum CommandHelp {
    /// Top-level help: every command.
    static var usage: String {
        """
        sidecar \(CommandLineInterface.version): the OneBusAway sidecar server (alarms, alerts, push registrations, ...)

        Usage:
          sidecar serve [flags]       Migrate the database and serve the rider API and console
          sidecar migrate [flags]     Apply database migrations and exit
          sidecar doctor [flags]      Check a configuration and everything it reaches (serve's flags)
          sidecar probe URL --region N
                                      Check a sidecar as an app would, endpoint by endpoint
          sidecar healthcheck         Exit 0 when a running server's /healthz answers 200
          sidecar region ...          Read the regions directory; list regions; set a region's agency id and time zone
          sidecar alert ...           Author, publish, translate and push service alerts
          sidecar schedule ...        Schedule an alert's send for its start or a time; list, change, cancel
          sidecar approval ...        Approve or reject what waits for a second person (region set --require-approval)
          sidecar source ...          Mirror and push the alerts of a GTFS-realtime feed the agency publishes
          sidecar push test --platform ios|android --token TOKEN
                                      Send one test notification and print the provider's answer
          sidecar apikey ...          Create, list and revoke admin API keys
          sidecar principal ...       Create, list and revoke service principals (they provision keys)
          sidecar user ...            Create, list and delete console accounts; set passwords
          sidecar sequence show|bump --min N
                                      Print or raise the id sequences (before importing another server's content)
          sidecar study ...           Create and list studies
          sidecar survey ...          Author surveys from JSON documents; export responses as CSV
          sidecar ghostbus export --region N
                                      Export ghost-bus reports as CSV
          sidecar links add-region    Print a region's onebusaway://add-region link and its QR code
          sidecar export --region N   Write a region as a sidecar-export/1 document (to or from OBACloud)
          sidecar import --file PATH  Read a sidecar-export/1 document (idempotent; --dry-run counts)
          sidecar backup --to FILE    Copy a live SQLite database consistently
          sidecar copy-database --from PATH|URL --to PATH|URL
                                      Copy every row to another database (SQLite to PostgreSQL)
          sidecar relay [flags]       Run the signed push relay (for the holder of the apps' push keys)
          sidecar relay-key show|create
                                      Print (or first create) this server's relay identity
          sidecar --help              This help; 'sidecar COMMAND --help' explains a command
          sidecar --version           Print the version

        Every flag can also be set as an environment variable SIDECAR_<FLAG_IN_UPPER_SNAKE>,
        e.g. --push-registration-limit as SIDECAR_PUSH_REGISTRATION_LIMIT (the relay's
        as SIDECAR_RELAY_<FLAG>). Flags win.
        """
    }

    static let backupUsage = """
        Usage: sidecar backup --to FILE [--replace] [--database PATH]

        Makes a consistent copy of a SQLite database while the server keeps running
        (SQLite's online backup API: writers are not blocked), checks it with
        PRAGMA integrity_check, and only then moves it to FILE. An existing FILE is
        refused unless --replace. To restore: stop the server, move the copy over the
        database file (remove any -wal and -shm files beside the old one), start it.
        A PostgreSQL database is backed up with pg_dump instead.
        """

    static let healthcheckUsage = """
        Usage: sidecar healthcheck [--url URL] [--port PORT] [--host ADDRESS]

        Asks a running server's /healthz and exits 0 when it answers 200, 1 otherwise
        (printing why): a container HEALTHCHECK that needs no curl in the image. The
        URL defaults to http://127.0.0.1:PORT/healthz with --port or SIDECAR_PORT (8080).
        """

    static let probeUsage = """
        Usage: sidecar probe URL --region N [--stop-id S --trip-id T --service-date MS [--stop-sequence K] [--vehicle-id V]] [--timeout SECONDS]

        Behaves like an app against a sidecar (this one, another implementation, a
        production host) and prints a pass/fail line per endpoint: push registration,
        Live Activity, alarm (with a real departure given), the alerts feed, surveys,
        weather and vehicles. Everything it creates it deletes. Exit status 1 when a
        check failed. Run it after every deployment.

          URL               the sidecar's base URL, e.g. https://sidecar.example.org
          --region N        the region to probe (its id in the regions directory)
          --stop-id, --trip-id, --service-date (epoch ms), --stop-sequence, --vehicle-id
                            a real departure, so an alarm can be created and deleted
          --timeout SECONDS how long each request may take (default 15)
        """

    static let doctorUsage = """
        Usage: sidecar doctor [serve's flags] [--offline] [--as-service [--unit PATH]] [--env-file PATH]

        Checks what 'sidecar serve' would run with the same flags and environment: the
        configuration, the database and its migrations, the regions directory, each
        region's OneBusAway server with its API key, APNs credentials (signs a provider
        token and opens a connection), FCM credentials (a token exchange), gorush, the
        Pirate Weather key and free disk space. One line per check, with a fix for each
        failure; exit status 1 when anything failed. --offline skips every check that
        needs the network.

          --as-service      check what the installed systemd service gets instead of this
                            shell's settings: the unit's Environment=, EnvironmentFile= and
                            ExecStart= flags and its LoadCredential= files, and whether the
                            service's user (DynamicUser=) can read every file it is given.
                            Run it with sudo, as systemd reads credentials as root.
          --unit PATH       the unit to read (default \(ServiceUnit.installedPath), with
                            its drop-ins in PATH.d/)
          --env-file PATH   read NAME=VALUE settings from a file first (as EnvironmentFile=)

        Operator commands and migrate take --as-service and --env-file too, to act on
        the service's database: sudo sidecar user create --as-service --email ... --role admin
        """

    static let copyUsage = """
        Usage: sidecar copy-database --from PATH|URL --to PATH|URL [--replace]

        Copies every row of a sidecar database to another: registrations, alarms, Live
        Activities, alerts with their translations and sends, surveys with questions and
        responses, ghost-bus reports and API keys, keeping their ids, then checks that each
        table holds as many rows on both sides. Each side is a SQLite file or a postgres://
        URL; both are migrated first. This is how an install moves from one machine to
        several instances on PostgreSQL:

          sidecar copy-database --from sidecar.sqlite3 --to postgres://sidecar:PASSWORD@db.example.org/sidecar

        Stop the server first (rows written meanwhile would not be copied). A target that
        already holds data is refused; --replace empties it first.
        """

    static let relayKeyUsage = """
        Usage: sidecar relay-key show [--relay-key-file PATH]
               sidecar relay-key create [--relay-key-file PATH]

        show prints this server's serverId and public key (a JWK) for the operator of
        the push relay it sends through (their --relay-allowed-servers list); it never
        creates a key. create writes a new key (mode 0600) and refuses to replace one.
        'sidecar serve --push-transport relay' also creates it at its first start. The
        file is --relay-key-file or SIDECAR_RELAY_KEY_FILE (default sidecar-relay-key.pem);
        keep it private: whoever holds it pushes as this server.
        """

    static let relayIntro = """

        Runs the signed push relay (docs/relay.md): the holder of the apps' APNs key and
        FCM project delivers for every sidecar that signs its requests, and only to the
        tokens each one bound. It needs --apns-key-file/--apns-key-id/--apns-team-id
        and/or --fcm-service-account. It keeps its own database (default
        \(CommandLineInterface.relayDefaultDatabase)) and refuses a sidecar's. Its environment variables
        start with SIDECAR_RELAY_, so a sidecar's environment file never configures it.

        """

    /// The flags production sets, which `serve --help` lists first.
    static let productionFlags = [
        "database", "public-url", "regions", "oba-api-key-file", "push-transport", "apns-key-file", "apns-key-id", "apns-team-id",
        "fcm-service-account", "gorush-url", "relay-url", "apple-app-ids", "android-app-links", "trusted-proxies", "metrics-listen",
    ]

    /// Help for `serve`, `migrate` and `relay`: their flags and environment
    /// variables, production's first for `serve`.
    static func commandUsage(_ command: String) -> String {
        let available = CommandLineInterface.flags(for: command)
        guard command == "serve" else {
            return "Usage: sidecar \(command) [flags]\n" + (command == "relay" ? relayIntro : "") + "\nFlags:\n"
                + flagList(available, command: command)
        }
        let production = productionFlags.compactMap { name in available.first { $0.name == name } }
        let others = available.filter { !productionFlags.contains($0.name) }
        return """
            Usage: sidecar serve [flags]

            Serves the rider API, the alerts feed, the console (/admin) and the background
            work. Without flags it runs on sidecar.sqlite3 with the bundled sample regions;
            'sidecar serve --demo' adds a simulated region to try everything. 'sidecar doctor'
            with the same flags checks a configuration before you start it.

            What production sets (see docs/production-checklist.md):

            """ + "\n" + flagList(production, command: command) + "\nEvery other flag:\n\n" + flagList(others, command: command)
                + "\nA switch (--demo) takes no value; --demo false turns it off.\n"
    }

    /// Flags as help lists them: name and value, what it does, its default
    /// (from the configuration the command starts with), its variable.
    static func flagList(_ flags: [Flag], command: String) -> String {
        let base = CommandLineInterface.baseConfiguration(for: command)
        return flags.map { flag in
            var help = flag.help
            if let shown = flag.shown(base) { help += " (default \(shown))" }
            if command == "relay" && flag.name == "database" {
                help += "; a sidecar's database is refused"
            } else if flag.name == "database", let operatorCommand = OperatorCommands.named(command),
                [.reads, .changes].contains(operatorCommand.access)
            {
                help += "; never created by this command"
            }
            return "  --\(flag.name)\(flag.isSwitch ? "" : " " + flag.valueName)\n      \(help)\n      env: \(flag.environmentName(for: command))\n"
        }.joined()
    }

    /// Help for a group of operator commands (`sidecar alert --help`): each
    /// command with its required options and what it does.
    static func adminUsage(group: String) -> String {
        if let command = OperatorCommands.named(group) { return operatorUsage(command) }
        var text = "Usage: sidecar \(group) <command> [options]\n\nCommands:\n"
        for command in OperatorCommands.all where command.name.hasPrefix(group + " ") {
            let required = command.options.filter(\.required).map(\.synopsis)
            let more = command.options.contains { !$0.required } ? ["[options]"] : []
            let line = (["sidecar", command.name] + (command.id.map { [$0] } ?? []) + required + more).joined(separator: " ")
            text += "  \(line)\n      \(command.summary)\n"
        }
        return text + "\nA command's options and the flags it shares with serve (--database, ...): sidecar \(group) <command> --help\n"
    }

    /// Help for one operator command: every option, required ones marked,
    /// then the flags it shares with `serve` and their environment variables.
    static func operatorUsage(_ command: OperatorCommand) -> String {
        var text = "Usage: \(command.synopsis)\n\n\(command.summary).\n"
        if !command.options.isEmpty {
            text += "\nOptions:\n"
            for option in command.options {
                let marks = (option.required ? ["required"] : []) + (option.repeatable ? ["repeatable"] : [])
                text +=
                    "  --\(option.name)\(option.value.map { " " + $0 } ?? "")\(marks.isEmpty ? "" : "   (" + marks.joined(separator: ", ") + ")")\n"
                text += "      \(option.help)\n"
            }
        }
        if !command.notes.isEmpty { text += "\n\(command.notes)\n" }
        if command.access != .none {
            text +=
                "\nIt says which database it used on standard error; "
                + (command.access == .reads
                    ? "it never creates one.\n"
                    : command.access == .changes
                        ? "it changes what is there and never creates one.\n" : "a new SQLite file is announced.\n")
        }
        if command.access != .none {
            text +=
                "\n--as-service [--unit PATH] takes the installed systemd service's settings (its database, regions and\n"
                + "credentials) instead of this shell's; --env-file PATH reads NAME=VALUE settings from a file.\n"
        }
        return text + "\nShared flags:\n" + flagList(operatorFlags(command), command: command.name)
    }

    /// The `serve` flags an operator command takes: storage and logging for
    /// all, push credentials for those that push.
    static func operatorFlags(_ command: OperatorCommand) -> [Flag] {
        // A command without a database has no use for its flags; a test
        // push needs neither regions nor translations.
        var unused: Set<String> = command.access == .none ? ["database", "database-timeout", "sqlite-synchronous", "locales"] : []
        if command.name == "push test" { unused.insert("regions") }
        return CommandLineInterface.flags.filter { flag in
            if flag.commands.contains(command.name) { return true }
            return flag.commands.contains("admin") && !unused.contains(flag.name)
        }
    }

}
