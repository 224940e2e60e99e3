import Core
import GTFSRealtime

/// One place an authored alert is about, as an editor names it: a route, a
/// stop, a trip (on one service day or every day), a kind of vehicle, or a
/// combination GTFS-realtime reads as "all of these at once" (a stop on one
/// route). Ids are OneBusAway's own, agency first (`1_100223`), as the
/// OneBusAway server and both apps show them.
struct AlertSelector: Equatable, Hashable, Sendable {
    var routeID: String?
    var stopID: String?
    var tripID: String?
    /// The trip's service day, `YYYYMMDD` (nil: the trip on every day).
    var tripStartDate: String?
    /// GTFS `route_type` (3 is bus).
    var routeType: Int32?
}

/// The rules of an authored alert's scope: its text form (one syntax for
/// the CLI, the admin API and the console), its limits, and the feed's
/// informed entities made from it. Pure.
///
/// Text: selectors separated by `;` or new lines; in each, `key=value`
/// words separated by spaces: `route=1_44`, `stop=1_75403`, `trip=1_604318`
/// with an optional `date=2026-12-01`, and `route_type=3` (or a name:
/// `bus`). An empty text is the whole agency (or region).
enum AlertScope {
    /// Selectors an authored alert may carry: enough for a detour's stops,
    /// few enough that checking each against OneBusAway stays quick.
    static let maxSelectors = 50
    /// The longest scope text taken (50 selectors of long ids fit).
    static let maxTextLength = 10_000

    /// GTFS `route_type` names (the basic types; extended types 100 to 1799
    /// are accepted as numbers).
    static let routeTypeNames: [(name: String, value: Int32)] = [
        ("tram", 0), ("subway", 1), ("rail", 2), ("bus", 3), ("ferry", 4), ("cable_tram", 5), ("aerial_lift", 6), ("funicular", 7),
        ("trolleybus", 11), ("monorail", 12),
    ]

    static func isRouteType(_ value: Int32) -> Bool {
        routeTypeNames.contains { $0.value == value } || (100...1799).contains(value)
    }

    static func routeTypeName(_ value: Int32) -> String {
        routeTypeNames.first { $0.value == value }?.name ?? "route type \(value)"
    }

    /// The selectors a text names, ids completed with `agencyID` when given
    /// bare (`44` → `1_44`); or every problem with it.
    static func parse(_ text: String, agencyID: String) -> Result<[AlertSelector], ValidationFailure> {
        var selectors: [AlertSelector] = []
        var problems: [String] = []
        let parts = text.split(whereSeparator: { $0 == ";" || $0.isNewline }).map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
        if parts.count > maxSelectors {
            return .failure(ValidationFailure(["Scope names \(parts.count) places; at most \(maxSelectors) (an alert about more is agency-wide)"]))
        }
        for part in parts {
            switch selector(part, agencyID: agencyID) {
            case .success(let selector):
                if selectors.contains(selector) {
                    problems.append("Scope lists '\(shown(part))' twice")
                } else {
                    selectors.append(selector)
                }
            case .failure(let failure): problems += failure.messages
            }
        }
        return problems.isEmpty ? .success(selectors) : .failure(ValidationFailure(problems))
    }

    /// A part of the text as quoted back in a message: short, on one line.
    static func shown(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(60).map(Character.init))
    }

    static func selector(_ text: String, agencyID: String) -> Result<AlertSelector, ValidationFailure> {
        var selector = AlertSelector()
        var seen: Set<String> = []
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            let pair = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = pair[0].lowercased()
            let value = pair.count == 2 ? String(pair[1]) : ""
            guard ["route", "stop", "trip", "date", "route_type"].contains(key) else {
                return .failure(
                    ValidationFailure([
                        "Scope: '\(shown(String(word)))' is not a selector word; use route=ID, stop=ID, trip=ID (with date=YYYY-MM-DD), route_type=bus"
                    ]))
            }
            guard !value.isEmpty else { return .failure(ValidationFailure(["Scope: \(key)= needs a value (in '\(shown(text))')"])) }
            guard seen.insert(key).inserted else { return .failure(ValidationFailure(["Scope: '\(shown(text))' gives \(key) twice"])) }
            switch key {
            case "date":
                guard let date = serviceDate(value) else {
                    return .failure(ValidationFailure(["Scope: date must be a service day, YYYY-MM-DD or YYYYMMDD (got '\(shown(value))')"]))
                }
                selector.tripStartDate = date
            case "route_type":
                let named = routeTypeNames.first { $0.name == value.lowercased() }?.value
                guard let type = named ?? Int32(value), isRouteType(type) else {
                    return .failure(
                        ValidationFailure([
                            "Scope: route_type must be a GTFS route type, a number or one of \(routeTypeNames.map(\.name).joined(separator: ", ")) (got '\(shown(value))')"
                        ]))
                }
                selector.routeType = type
            default:
                switch id(value, agencyID: agencyID, kind: key) {
                case .success(let full):
                    if key == "route" { selector.routeID = full } else if key == "stop" { selector.stopID = full } else { selector.tripID = full }
                case .failure(let failure): return .failure(failure)
                }
            }
        }
        if selector.tripStartDate != nil && selector.tripID == nil {
            return .failure(ValidationFailure(["Scope: date= goes with trip= (the trip's service day), in '\(shown(text))'"]))
        }
        if selector == AlertSelector() { return .failure(ValidationFailure(["Scope: '\(shown(text))' names nothing"])) }
        let agencies = Set([selector.routeID, selector.stopID, selector.tripID].compactMap { $0.map(agency(of:)) })
        if agencies.count > 1 {
            return .failure(
                ValidationFailure([
                    "Scope: '\(shown(text))' mixes agencies \(agencies.sorted().joined(separator: " and ")); one place per selector belongs to one agency"
                ]))
        }
        return .success(selector)
    }

    /// A OneBusAway id, completed with the agency when given bare.
    static func id(_ value: String, agencyID: String, kind: String) -> Result<String, ValidationFailure> {
        guard value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            return .failure(ValidationFailure(["Scope: a \(kind) id has a control character"]))
        }
        let full: String
        if let underscore = value.firstIndex(of: "_"), underscore != value.startIndex, value.index(after: underscore) != value.endIndex {
            full = value
        } else if !agencyID.isEmpty, !value.hasPrefix("_") {
            full = agencyID + "_" + value
        } else {
            return .failure(
                ValidationFailure([
                    "Scope: \(kind) '\(shown(value))' needs its agency, as OneBusAway writes it (1_\(shown(value).trimmingPrefix("_"))): the alert is region-wide"
                ]))
        }
        guard full.count <= FieldLimits.identifier else {
            return .failure(ValidationFailure(["Scope: a \(kind) id is longer than \(FieldLimits.identifier) characters"]))
        }
        return .success(full)
    }

    /// `YYYYMMDD` from `YYYY-MM-DD` or `YYYYMMDD`, for a real calendar day.
    static func serviceDate(_ text: String) -> String? {
        let digits = text.filter { $0 != "-" }
        guard digits.count == 8, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
            text.count == 8 || (text.count == 10 && Array(text)[4] == "-" && Array(text)[7] == "-"),
            let year = Int(digits.prefix(4)), let month = Int(digits.dropFirst(4).prefix(2)), let day = Int(digits.suffix(2)),
            (2000...2100).contains(year), (1...12).contains(month), day >= 1
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return day <= days ? digits : nil
    }

    /// The agency part of a OneBusAway id (before its first `_`), as
    /// OneBusAway itself splits it.
    static func agency(of id: String) -> String {
        id.firstIndex(of: "_").map { String(id[..<$0]) } ?? ""
    }

    /// The id within its agency: what GTFS and the feed's selector carry.
    static func localID(_ id: String) -> String {
        id.firstIndex(of: "_").map { String(id[id.index(after: $0)...]) } ?? id
    }

    /// The canonical text, as stored and shown (`route=1_44 stop=1_75403; trip=1_9 date=20261201`).
    static func text(_ selectors: [AlertSelector]) -> String {
        selectors.map { selector in
            var words: [String] = []
            if let route = selector.routeID { words.append("route=\(route)") }
            if let stop = selector.stopID { words.append("stop=\(stop)") }
            if let trip = selector.tripID { words.append("trip=\(trip)") }
            if let date = selector.tripStartDate { words.append("date=\(date)") }
            if let type = selector.routeType {
                words.append("route_type=\(routeTypeNames.first { $0.value == type }?.name ?? String(type))")
            }
            return words.joined(separator: " ")
        }.joined(separator: "; ")
    }

    /// Stored text back into selectors; a stored text this binary cannot
    /// read is an error, never a silently wider alert.
    static func stored(_ text: String) throws -> [AlertSelector] {
        switch parse(text, agencyID: "") {
        case .success(let selectors): return selectors
        case .failure(let failure): throw ScopeReadError(text: text, messages: failure.messages)
        }
    }

    struct ScopeReadError: Error, CustomStringConvertible {
        let text: String
        let messages: [String]
        var description: String { "stored alert scope '\(text.prefix(80))' cannot be read: \(messages.joined(separator: "; "))" }
    }

    /// The feed's informed entities: the agency alone for an unscoped alert;
    /// else one selector per place, each with its agency (both apps keep an
    /// alert only when a selector carries `agency_id`), ids within it as
    /// GTFS has them, which is how a OneBusAway server or a trip planner
    /// reading the feed matches them.
    static func feedSelectors(_ alert: ServiceAlert) -> [EntitySelector] {
        guard !alert.scope.isEmpty else { return [EntitySelector(agencyID: alert.agencyID)] }
        return alert.scope.map { selector in
            let named = [selector.routeID, selector.stopID, selector.tripID].compactMap { $0 }.first
            var entity = EntitySelector(agencyID: named.map(agency(of:)) ?? alert.agencyID)
            entity.routeID = selector.routeID.map(localID)
            entity.stopID = selector.stopID.map(localID)
            entity.routeType = selector.routeType
            if let trip = selector.tripID {
                entity.trip = TripDescriptor(tripID: localID(trip), startDate: selector.tripStartDate)
            }
            return entity
        }
    }

    /// One place in words (`stop 1_75403 on route 1_44`).
    static func describe(_ selector: AlertSelector) -> String {
        var parts: [String] = []
        if let trip = selector.tripID {
            parts.append("trip \(trip)" + (selector.tripStartDate.map { " on \($0.prefix(4))-\($0.dropFirst(4).prefix(2))-\($0.suffix(2))" } ?? ""))
        }
        if let stop = selector.stopID { parts.append("stop \(stop)") }
        if let route = selector.routeID { parts.append((parts.isEmpty ? "" : "on ") + "route \(route)") }
        if let type = selector.routeType { parts.append((parts.isEmpty ? "every " : "by ") + routeTypeName(type)) }
        return parts.joined(separator: " ")
    }

    /// The whole scope in words, for pages and `alert show`.
    static func describe(_ alert: ServiceAlert) -> String {
        guard !alert.scope.isEmpty else { return alert.agencyID.isEmpty ? "the whole region" : "the whole agency \(alert.agencyID)" }
        return alert.scope.map(describe).joined(separator: "; ")
    }

    /// What the shipped apps do with a scope: the same as with the agency
    /// alone (they match the feed on `agency_id` and nothing else).
    static let appsNote =
        "Both apps show a scoped alert as they show an agency-wide one (they read only its agency); OneBusAway servers and trip planners reading the feed place it on its routes, stops and trips."

    /// One id a scope asks OneBusAway about.
    struct Lookup: Hashable, Sendable {
        enum Kind: String, Sendable { case route, stop, trip }
        let kind: Kind
        let id: String
    }

    /// The distinct ids of a scope, in order.
    static func lookups(_ selectors: [AlertSelector]) -> [Lookup] {
        var seen: Set<Lookup> = []
        var lookups: [Lookup] = []
        for selector in selectors {
            for lookup in [
                selector.routeID.map { Lookup(kind: .route, id: $0) }, selector.stopID.map { Lookup(kind: .stop, id: $0) },
                selector.tripID.map { Lookup(kind: .trip, id: $0) },
            ].compactMap({ $0 }) where seen.insert(lookup).inserted {
                lookups.append(lookup)
            }
        }
        return lookups
    }
}
