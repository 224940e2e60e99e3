import Core
import TestSupport

/// Random JSON values for tests that hold two implementations to the same
/// result (a fixed seed, so a failure repeats): scalars of every kind,
/// strings with escapes, controls and characters outside ASCII, and nested
/// arrays and objects.
struct RandomJSON {
    var generator: SplitMix

    init(seed: UInt64) { generator = SplitMix(seed: seed) }

    /// What `check` reports wrong for `count` random trees (nested at most 4
    /// levels). Seconds of CPU in a debug build: run off the concurrency
    /// pool, whose threads other suites' servers need.
    static func mismatches(seed: UInt64, count: Int, _ check: @escaping @Sendable (JSONValue) -> [String]) async -> [String] {
        await offPool {
            var random = RandomJSON(seed: seed)
            var found: [String] = []
            for _ in 0..<count { found += check(random.tree(4)) }
            return found
        }
    }

    mutating func scalar() -> JSONValue {
        switch generator.next() % 7 {
        case 0: return .null
        case 1: return .bool(generator.next() % 2 == 0)
        case 2: return .integer(Int64(bitPattern: generator.next()) >> Int64(generator.next() % 63))
        case 3: return .double(Double(bitPattern: generator.next() & 0x7FEF_FFFF_FFFF_FFFF) * (generator.next() % 2 == 0 ? 1 : -1))
        case 4: return .double(Double(Int64(generator.next() % 100_000)) / 8)
        case 5: return .double(Double(Int64(generator.next() % 1_000_000)) / 1000 - 500)
        default:
            let alphabet = Array("aZ09 _-\"\\/\n\t\u{0}\u{1}é€😀\u{2028}".unicodeScalars)
            let count = Int(generator.next() % 12)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<count { scalars.append(alphabet[Int(generator.next() % UInt64(alphabet.count))]) }
            return .string(String(scalars))
        }
    }

    /// A value nested at most `depth` levels.
    mutating func tree(_ depth: Int) -> JSONValue {
        guard depth > 0, generator.next() % 3 != 0 else { return scalar() }
        let count = Int(generator.next() % 5)
        if generator.next() % 2 == 0 {
            var list: [JSONValue] = []
            for _ in 0..<count { list.append(tree(depth - 1)) }
            return .array(list)
        }
        var members: [String: JSONValue] = [:]
        for _ in 0..<count {
            guard case .string(let key) = scalar() else { continue }
            members[key] = tree(depth - 1)
        }
        return .object(members)
    }
}
