import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Whether the service a unit starts can reach a file: the rules of
/// `DynamicUser=` (a user no file belongs to, in no group), `ProtectHome=`,
/// `PrivateTmp=` and `ProtectSystem=strict`, applied to what the file
/// system says. Pure over `FileFacts`, so every clause has a test.
enum ServiceAccess {
    /// One path's owner, group and mode, as `stat` reports them.
    struct FileFacts: Sendable, Equatable {
        var uid: UInt32
        var gid: UInt32
        var mode: UInt32
        var isDirectory: Bool
    }

    /// Who the service runs as.
    enum Identity: Sendable, Equatable {
        /// `DynamicUser=yes`: a fresh id, owning nothing, in no group.
        case dynamic
        case user(uid: UInt32, groups: [UInt32])
    }

    enum Verdict: Sendable, Equatable {
        case reachable
        /// The path (or the directory it would be created in) does not exist.
        case missing
        /// `component` denies the service (its mode shown as `facts`).
        case denied(component: String, facts: FileFacts)
        /// The unit hides the path from the service.
        case hidden(reason: String)
        /// The unit makes the path read-only for the service.
        case readOnly(reason: String)
    }

    /// Can the service read `path`?
    static func read(_ path: String, unit: ServiceUnit, identity: Identity, facts: (String) -> FileFacts?) -> Verdict {
        if let hidden = hiddenReason(path, unit: unit) { return .hidden(reason: hidden) }
        if under(path, unit.statePaths) { return .reachable }
        return walk(path, identity: identity, facts: facts, finalBit: 4)
    }

    /// Can the service create and write files in `directory` (a SQLite
    /// database's, the relay key's)?
    static func write(_ directory: String, unit: ServiceUnit, identity: Identity, facts: (String) -> FileFacts?) -> Verdict {
        if let hidden = hiddenReason(directory, unit: unit) { return .hidden(reason: hidden) }
        // systemd creates the state directory and hands it to the service.
        if under(directory, unit.statePaths) { return .reachable }
        if let system = unit.protectSystem?.lowercased(), system == "strict" || system == "full" || system == "yes" {
            let readOnly = system == "strict" ? ["/"] : system == "full" ? ["/usr", "/boot", "/efi", "/etc"] : ["/usr", "/boot", "/efi"]
            if under(directory, readOnly) && !under(directory, unit.readWritePaths) {
                return .readOnly(reason: "ProtectSystem=\(system) makes \(directory) read-only for the service")
            }
        }
        // A directory serve would make: its nearest existing ancestor must
        // take the new entry.
        var target = directory
        while facts(target) == nil, target != "/", let slash = target.lastIndex(of: "/") {
            target = slash == target.startIndex ? "/" : String(target[..<slash])
        }
        return walk(target, identity: identity, facts: facts, finalBit: 2 | 1)
    }

    /// What the unit hides: /home, /root and /run/user under `ProtectHome=`,
    /// /tmp and /var/tmp (the service gets empty ones) under `PrivateTmp=`.
    static func hiddenReason(_ path: String, unit: ServiceUnit) -> String? {
        if let home = unit.protectHome?.lowercased(), ServiceUnit.boolean(home) || home == "tmpfs",
            under(path, ["/home", "/root", "/run/user"])
        {
            return "ProtectHome=\(unit.protectHome ?? "") hides \(path) from the service"
        }
        if unit.privateTmp && under(path, ["/tmp", "/var/tmp"]) {
            return "PrivateTmp=yes gives the service a /tmp of its own, without \(path)"
        }
        return nil
    }

    /// Each directory on the way must let the service search it (x), and
    /// the last component grant `finalBit` (read 4, write and search 3).
    static func walk(_ path: String, identity: Identity, facts: (String) -> FileFacts?, finalBit: UInt32) -> Verdict {
        let components = path.split(separator: "/").map(String.init)
        var current = ""
        for (index, component) in components.enumerated() {
            let parent = current.isEmpty ? "/" : current
            current += "/" + component
            guard let parentFacts = facts(parent) else { return .missing }
            if !grants(parentFacts, identity: identity, bits: 1) { return .denied(component: parent, facts: parentFacts) }
            guard let own = facts(current) else { return .missing }
            if index == components.count - 1 && !grants(own, identity: identity, bits: finalBit) {
                return .denied(component: current, facts: own)
            }
        }
        return .reachable
    }

    /// The permission bits that apply to `identity`: owner's, group's or
    /// everyone else's (root is never the service here).
    static func grants(_ facts: FileFacts, identity: Identity, bits: UInt32) -> Bool {
        let shift: UInt32
        switch identity {
        case .dynamic: shift = 0
        case .user(let uid, let groups):
            shift = uid == facts.uid ? 6 : groups.contains(facts.gid) ? 3 : 0
        }
        return (facts.mode >> shift) & bits == bits
    }

    static func under(_ path: String, _ roots: [String]) -> Bool {
        roots.contains { root in
            let root = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
            return root == "/" || path == root || path.hasPrefix(root + "/")
        }
    }

    /// `stat` of a path, following symbolic links; nil when it does not exist.
    @Sendable static func facts(of path: String) -> FileFacts? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileFacts(
            uid: info.st_uid, gid: info.st_gid, mode: UInt32(info.st_mode) & 0o7777, isDirectory: (info.st_mode & S_IFMT) == S_IFDIR)
    }

    /// The identity of `User=name`, from the password and group databases.
    static func identity(of unit: ServiceUnit) -> Identity? {
        if unit.dynamicUser { return .dynamic }
        guard let name = unit.user else { return nil }
        guard let entry = getpwnam(name) else { return nil }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: 64)
        if getgrouplist(name, gid, &groups, &count) < 0 { count = 1 }
        return .user(uid: uid, groups: Array(groups.prefix(Int(max(1, count)))))
    }

    /// `0600 root:root`, as `ls -l` would make you look it up.
    static func describe(_ facts: FileFacts) -> String {
        let owner = getpwuid(facts.uid).flatMap { String(validatingCString: $0.pointee.pw_name) } ?? String(facts.uid)
        let group = getgrgid(facts.gid).flatMap { String(validatingCString: $0.pointee.gr_name) } ?? String(facts.gid)
        let octal = String(facts.mode, radix: 8)
        return "mode \(String(repeating: "0", count: max(0, 4 - octal.count)) + octal) \(owner):\(group)"
    }
}
