import Foundation
import Testing

@testable import SidecarKit

/// Instants are `EpochSeconds` or `EpochMillis` from the clock to the
/// column, so seconds cannot be stored where milliseconds belong (or the
/// reverse) without the compiler noticing. This reads the server's source
/// and fails naming each instant still kept as a bare `Int64`, and each
/// unit conversion written by hand instead of through `.seconds`/`.millis`.
@Suite("App: instants are typed")
struct InstantTypeTests {
    /// camelCase words that make a name an instant: `createdAt`,
    /// `stalledSince`, `startDate`, `cutoffMillis`, `now`. A unit alone
    /// (`lifetimeSeconds`, `claimMillis`) or first (`secondsUntilDeparture`)
    /// names a duration, and a last word `ID` an id (`beforeID`): numbers both.
    static let instantWords: Set<String> = [
        "At", "Time", "Since", "Until", "Date", "Start", "End", "Expires", "Deadline", "Before", "Now", "Cutoff", "From", "To",
    ]

    /// Hand-written conversions that are not an instant changing unit.
    static let allowedConversions: [(file: String, fragment: String)] = [
        // The bridge between Foundation's Date and the typed instants is where the factor lives.
        ("Common/EpochMillis.swift", "timeIntervalSince1970 * 1000"),
        ("Common/EpochMillis.swift", "Double(epochMillis) / 1000"),
        // The text format: splitting an instant into its printed seconds and fraction.
        ("Common/Timestamp.swift", "seconds * 1000 + Int64(millis)"),
        ("Common/Timestamp.swift", "millis - seconds * 1000"),
        // Durations handed to Task.sleep and compared with ContinuousClock, not instants.
        ("Kernel/WallClock.swift", "max(seconds, 0) * 1000"),
        ("App/HealthRoutes.swift", "maxAge * 1000"),
        // Text, not an instant: a share link's service date is read in seconds with a fraction, or in milliseconds.
        ("Links/LinkRules.swift", "value * 1000"),
        // A duration: the schedule deviation in whole seconds toward zero, as OneBusAway counts it (an early bus is negative).
        ("LiveActivities/ContentState.swift", "time.millis(since: scheduled ?? time) / 1000"),
    ]

    /// Bare numbers whose name says instant, each for a reason.
    static let allowedDeclarations: [(file: String, name: String)] = [
        // A Live Activity registration's service date as the app sent it, seconds or milliseconds:
        // stored so, and made milliseconds only by `TrackedVisit`.
        ("LiveActivities/LiveActivityStore.swift", "serviceDate"),
        ("LiveActivities/ContentState.swift", "serviceDate"),
        // HTTPServer's `SharedWindowCounter` (a lower module) names its rate-limit windows by number.
        ("Kernel/Coordination.swift", "windowStart"),
    ]

    /// Whether `name` says it holds an instant.
    static func namesAnInstant(_ name: Substring) -> Bool {
        let words = words(name)
        guard let first = words.first, !["Seconds", "Millis", "Minutes", "Days"].contains(first), words.last != "ID" else { return false }
        return !Set(words).isDisjoint(with: instantWords)
    }

    /// The camelCase words of `name`, each capitalized, an acronym one word:
    /// `lastPushedAt` is Last, Pushed, At; `beforeID` is Before, ID.
    static func words(_ name: Substring) -> [String] {
        let capitalized = name.prefix(1).uppercased() + name.dropFirst()
        return capitalized.matches(of: /[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[0-9]+/).map { String($0.output) }
    }

    /// `text` without comments and multi-line string literals (SQL keeps
    /// its own arithmetic, e.g. `created_at / 1000` in a GROUP BY); a
    /// literal leaves its line breaks so line numbers still match the file.
    static func code(_ text: String) -> String {
        text.replacing(/"""[\s\S]*?"""/) { String(repeating: "\n", count: $0.output.count { $0 == "\n" }) }
            .replacing(/\/\/[^\n]*/, with: "")
    }

    static func findings() throws -> [String] {
        var found: [String] = []
        for (path, text) in try CentralListTests.sources() {
            let file = path.components(separatedBy: "/Sources/SidecarKit/").last ?? path
            for (number, line) in code(text).components(separatedBy: "\n").enumerated() {
                let place = "\(file):\(number + 1)"
                for match in line.matches(of: /(\w+)\s*:\s*Int64\??(?![\w.])/) where namesAnInstant(match.output.1) {
                    let name = String(match.output.1)
                    guard !allowedDeclarations.contains(where: { file.hasSuffix($0.file) && $0.name == name }) else { continue }
                    found.append("\(place): \(name) is an instant kept as a bare Int64")
                }
                for match in line.matches(of: /func (\w+)\([^)]*\)[^{]*-> Int64\??\s*\{?/) where namesAnInstant(match.output.1) {
                    found.append("\(place): \(match.output.1) returns an instant as a bare Int64")
                }
                if line.contains(/now\(\)\.epochMillis/) {
                    found.append("\(place): the clock's time read as a bare number (use nowMillis or nowSeconds)")
                }
                if line.contains(/[\/*] ?1000\b/),
                    !allowedConversions.contains(where: { file.hasSuffix($0.file) && line.contains($0.fragment) })
                {
                    found.append("\(place): a unit converted by hand (\(line.trimmingCharacters(in: .whitespaces)))")
                }
            }
        }
        return found.sorted()
    }

    @Test func everyInstantIsTypedAndConvertedThroughItsType() throws {
        let found = try Self.findings()
        #expect(found.isEmpty, "\(found.count) bare instants or hand conversions:\n\(found.joined(separator: "\n"))")
    }

    /// The reader itself: it sees what it is meant to see and nothing else.
    @Test func theRuleTellsInstantsFromDurations() {
        #expect(Self.words("lastPushedAt") == ["Last", "Pushed", "At"])
        #expect(Self.words("beforeID") == ["Before", "ID"])
        for instant in ["createdAt", "now", "nowMillis", "stalledSince", "serviceDate", "cutoffMillis", "startedAtMillis", "at", "until"] {
            #expect(Self.namesAnInstant(instant[...]), "\(instant)")
        }
        let numbers = [
            "lifetimeSeconds", "staleAfterSeconds", "claimMillis", "timeoutSeconds", "attempts", "maxAttempts", "beforeID", "secondsUntilDeparture",
        ]
        for number in numbers { #expect(!Self.namesAnInstant(number[...]), "\(number)") }
        #expect(Self.code("let a = 1 // x * 1000\nlet q = \"\"\"\nSELECT created_at / 1000\n\"\"\"") == "let a = 1 \nlet q = \n\n")
    }
}
