import FoundationEssentials

/// One region from the regions directory (regions-v3.json). Its integer `id`
/// is the `{regionId}` of every sidecar path.
struct Region: Sendable, Equatable {
    let id: Int
    let name: String
    /// Base URL of the region's OneBusAway REST API server.
    let obaBaseURL: String?
    /// Base URL the apps use for this sidecar.
    let sidecarBaseURL: String?
    let bounds: [Bounds]
    /// What the apps' add-region links carry besides the two servers
    /// (`otpBaseUrl`, `otpBaseGraphqlUrl`, `supportsOtpGraphqlBikeshare`,
    /// `umamiAnalytics` in the directory).
    var tripPlanner = TripPlanner()
    var analytics: Analytics?

    /// The region's OpenTripPlanner servers.
    struct TripPlanner: Sendable, Equatable {
        var restURL: String?
        var graphqlURL: String?
        var graphqlBikeshare = false
        init(restURL: String? = nil, graphqlURL: String? = nil, graphqlBikeshare: Bool = false) {
            self.restURL = restURL
            self.graphqlURL = graphqlURL
            self.graphqlBikeshare = graphqlBikeshare
        }
    }

    /// An Umami analytics site: the apps use it only with both values.
    struct Analytics: Sendable, Equatable {
        var url: String
        var siteID: String
        init(url: String, siteID: String) {
            self.url = url
            self.siteID = siteID
        }
    }

    /// One rectangle of the region's coverage.
    struct Bounds: Sendable, Equatable, Codable {
        let lat: Double
        let lon: Double
        let latSpan: Double
        let lonSpan: Double
    }

    init(
        id: Int, name: String, obaBaseURL: String?, sidecarBaseURL: String?, bounds: [Bounds],
        tripPlanner: TripPlanner = TripPlanner(), analytics: Analytics? = nil
    ) {
        self.id = id
        self.name = name
        self.obaBaseURL = obaBaseURL
        self.sidecarBaseURL = sidecarBaseURL
        self.bounds = bounds
        self.tripPlanner = tripPlanner
        self.analytics = analytics
    }

    /// The id-prefixed slug the reference emits in resource URLs
    /// (`1-puget-sound`); apps replay it verbatim, and `RegionPath` reads the
    /// id back from its leading integer.
    var slug: String {
        var words: [String] = []
        var current = ""
        for character in name.lowercased() {
            if character.isASCII && (character.isLetter || character.isNumber) {
                current.append(character)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return ([String(id)] + words).joined(separator: "-")
    }
}

/// Spec §1.2 and §2.4: how a path segment names a region.
enum RegionPath {
    /// The region id a path segment carries: its leading decimal integer,
    /// alone or followed by `-` and anything (`1`, `1-puget-sound`, `01`), the
    /// contract's `^[0-9]+(-.*)?$`; nil for `abc`, `-3`, `0.5`, `7abc` or an
    /// integer that overflows.
    static func regionID(fromSegment segment: String) -> Int? {
        var value = 0
        var sawDigit = false
        for byte in segment.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                guard byte == UInt8(ascii: "-") else { return nil }
                break
            }
            sawDigit = true
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            if overflowA || overflowB { return nil }
            value = sum
        }
        return sawDigit ? value : nil
    }
}
