import Core
import FoundationEssentials
import GTFSRealtime
import Push

// MARK: - Reading a document

extension RegionExchange {
    struct Alert {
        var id: Int64, agencyID: String, header: String, description: String, url: String, cause: String, effect: String, severity: String
        var start: EpochMillis, end: EpochMillis?, published: Bool, test: Bool, created: EpochMillis, updated: EpochMillis
        var translations: [Translation]
        /// Epoch milliseconds, both or neither.
        var impactStart: EpochMillis? = nil, impactEnd: EpochMillis? = nil
        /// For an alert mirrored from a source: the link that lets the
        /// source withdraw it.
        var mirror: MirrorLink? = nil
        /// The places an authored alert is about (a Sidecar extension).
        var scope: [AlertSelector] = []
    }
    struct Translation { var language: String, header: String, description: String, sourceHeader: String, sourceDescription: String }
    struct Study { var id: Int64, name: String, description: String, created: EpochMillis, updated: EpochMillis, surveys: [Survey] }
    struct Survey {
        var id: Int64, name: String, available: Bool, start: EpochMillis?, end: EpochMillis?, showOnMap: Bool, showOnStops: Bool, alwaysVisible: Bool
        var allowsMultipleResponses: Bool, visibleStops: [String]?, visibleRoutes: [String]?, created: EpochMillis, updated: EpochMillis
        var questions: [Question]
    }
    struct Question { var id: Int64, position: Int64, required: Bool, content: JSONValue }
    struct Response {
        var surveyID: Int64, publicID: String, user: String, stop: String, latitude: Double?, longitude: Double?, answers: JSONValue
        var created: EpochMillis, updated: EpochMillis
    }
    struct Registration {
        var token: String, operatingSystem: PushPlatform, locale: String, sandbox: Bool, testDevice: Bool, description: String
        var lastSeen: EpochMillis, created: EpochMillis
    }
    struct GhostBusReport {
        var publicID: String, user: String, trip: String, serviceDate: EpochMillis, route: String, stop: String, vehicle: String
        var stopSequence: Int64?, predicted: Bool?, deviation: Int64?, wait: Int64, comment: String, latitude: Double?, longitude: Double?
        var scheduled: EpochMillis?, predictedArrival: EpochMillis?, predictionUpdated: EpochMillis?, status: String, snapshot: JSONValue?
        var capturedAt: EpochMillis?, created: EpochMillis
    }
    struct Document {
        var regionID: Int, alerts: [Alert], studies: [Study], responses: [Response], registrations: [Registration], reports: [GhostBusReport]
        var sources: [Source] = []
        /// Fields of a newer exporter this sidecar skipped, by place.
        var skippedFields: [String] = []
        /// Alerts that came without a severity (imported as UNKNOWN_SEVERITY).
        var unratedAlerts: [Int64] = []

        /// What an operator is told beside the import's summary.
        var warnings: [String] {
            var lines: [String] = []
            if !skippedFields.isEmpty {
                lines.append(
                    "skipped \(skippedFields.count) field\(skippedFields.count == 1 ? "" : "s") this sidecar does not know (a newer exporter's; --strict refuses them): "
                        + skippedFields.prefix(20).joined(separator: ", ") + (skippedFields.count > 20 ? ", ..." : ""))
            }
            if !unratedAlerts.isEmpty {
                lines.append(
                    "alert\(unratedAlerts.count == 1 ? "" : "s") \(unratedAlerts.prefix(20).map(String.init).joined(separator: ", ")) came without a severity: "
                        + "imported as UNKNOWN_SEVERITY, which the Android app never shows (set one with sidecar alert edit ID --severity WARNING)")
            }
            return lines
        }
    }

    // Alert sources (a Sidecar extension, `alert_sources`, absent from
    // OBACloud's documents): each source's settings without its secrets, what
    // each of its alerts became, and on each mirrored alert its link to its
    // source, so a withdrawal at the agency still removes it after a move.
    struct MirrorLink {
        var sourceID: Int64, entityID: String, message: [UInt8], inFeed: Bool, withdrawnAt: EpochMillis?
    }

    struct Source {
        var settings: AlertSource
        /// Header names the source sent; their secrets must be given again.
        var headerNames: [String]
        var alerts: [SourceAlertState]
    }
}
