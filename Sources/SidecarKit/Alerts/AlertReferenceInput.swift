import Core
import FoundationEssentials
import GTFSRealtime

/// The Go reference's alert body read into Sidecar's authoring fields,
/// with the reference's own refusals and words where it checks before the
/// shared rules do (`AlertInputRules` then checks everything else alike):
/// `start_time` → `start`, `end_time` → `end`, `is_test` → `test`,
/// `clear_end_time` → an empty `end`, enum names trimmed and uppercased
/// with an empty one meaning `UNKNOWN_…`. Pure.
enum ReferenceAlertInput {
    static let stringFields: [(body: String, field: String)] = [
        ("agency_id", "agency_id"), ("header", "header"), ("description", "description"), ("url", "url"), ("cause", "cause"),
        ("effect", "effect"), ("severity", "severity"), ("start_time", "start"), ("end_time", "end"),
    ]

    static func fields(_ body: [String: JSONValue], creating: Bool) throws(ReferenceFailure) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, field) in stringFields {
            switch body[name] {
            case nil, .null?: continue
            case .string(let text)?: fields[field] = text
            default: throw .badRequest("invalid JSON body: \(name) must be a string")
            }
        }
        for (name, field) in [("is_test", "test"), ("clear_end_time", "clear_end")] {
            switch body[name] {
            case nil, .null?: continue
            case .bool(let flag)?: fields[field] = flag ? "true" : "false"
            default: throw .badRequest("invalid JSON body: \(name) must be a boolean")
            }
        }
        if !creating {
            let clears = fields.removeValue(forKey: "clear_end") == "true"
            if clears {
                if fields["end"] != nil { throw .badRequest("send only one of end_time and clear_end_time") }
                fields["end"] = ""
            }
            if fields["header"] == "" { throw .badRequest("header must not be empty") }
            if fields["agency_id"] == "" { throw .badRequest("agency_id must not be empty") }
        } else {
            fields["clear_end"] = nil
        }
        try normalizeEnum(&fields, "cause", Cause.allCases.map(\.name), unknown: "UNKNOWN_CAUSE", creating: creating)
        try normalizeEnum(&fields, "effect", Effect.allCases.map(\.name), unknown: "UNKNOWN_EFFECT", creating: creating)
        try normalizeEnum(&fields, "severity", SeverityLevel.allCases.map(\.name), unknown: "UNKNOWN_SEVERITY", creating: creating)
        return fields
    }

    /// Trimmed and uppercased; empty (or absent on a create) is the
    /// `UNKNOWN_…` value; a name GTFS-realtime does not have is refused with the valid ones.
    static func normalizeEnum(
        _ fields: inout [String: String], _ name: String, _ names: [String], unknown: String, creating: Bool
    ) throws(ReferenceFailure) {
        guard let raw = fields[name] ?? (creating ? "" : nil) else { return }
        let value = raw.trimmingWhitespace().uppercased()
        if value.isEmpty {
            fields[name] = unknown
        } else if names.contains(value) {
            fields[name] = value
        } else {
            throw .badRequest("unknown \(name) \"\(raw)\"; valid values: \(names.sorted().joined(separator: ", "))")
        }
    }

    /// The alert's period as the reference checks it, on the stored alert
    /// overlaid with the change: times in RFC 3339 with an offset, a start
    /// from 2000 to ten years ahead, an end after the start.
    static func checkWindow(
        _ fields: [String: String], previous: ServiceAlert?, regionID: Int, zone: String?, now: EpochSeconds
    ) throws(ReferenceFailure) {
        func parse(_ raw: String) throws(ReferenceFailure) -> EpochSeconds {
            guard let value = AlertInputRules.parseTime(raw) else {
                let configured = zone.map { "region \(regionID) is configured as \($0)" } ?? "region \(regionID) has no configured timezone"
                throw .badRequest(
                    "\"\(raw)\" must be RFC 3339 with an explicit offset (e.g. 2026-08-15T14:00:00-07:00); \(configured): cannot parse \"\(raw)\"")
            }
            return value
        }
        var start = previous?.startsAt
        if let raw = fields["start"] ?? (previous == nil ? "" : nil) { start = try parse(raw) }
        var end = previous?.endsAt
        if let raw = fields["end"] { end = raw.isEmpty ? nil : try parse(raw) }
        guard let start else { return }
        if start.value < 946_684_800 { throw .badRequest("start \(goTime(start)) is before 2000; check the year") }
        if start.value > now.value + 10 * 366 * 86_400 { throw .badRequest("start \(goTime(start)) is more than 10 years out; check the year") }
        if let end, end <= start { throw .badRequest("end \(goTime(end)) must be after start \(goTime(start))") }
    }

    /// An instant as Go's default time text writes one in UTC (`2026-08-15 21:00:00 +0000 UTC`).
    static func goTime(_ instant: EpochSeconds) -> String {
        guard case .string(let text) = AdminJSON.time(instant) else { return String(instant.value) }
        return text.replacing("T", with: " ").replacing("Z", with: " +0000 UTC")
    }
}
