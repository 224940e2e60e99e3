import Foundation

/// The links the OneBusAway apps make and follow
/// (`../shared/seeds/ios-url-schemes-and-deep-links.txt`), encoded and
/// decoded exactly as the apps do.
public enum SidecarLink: Equatable, Sendable {
    /// `https://<sidecar>/regions/{id}/stops/{stop}` (Handoff; the app does not decode it).
    case stop(regionID: Int, stopID: String)
    /// `https://<sidecar>/regions/{id}/stops/{stop}/trips?trip_id=…&service_date=…&stop_sequence=…`
    case trip(TripLink)
    /// `onebusaway://view-stop?stopID=…&regionID=…`
    case viewStop(stopID: String, regionID: Int)
    /// `onebusaway://add-region?name=…&oba-url=…`
    case addRegion(AddRegion)

    public struct TripLink: Equatable, Sendable {
        public var regionID: Int
        public var stopID: String
        public var tripID: String
        /// Epoch milliseconds (the link carries seconds).
        public var serviceDate: Int64
        public var stopSequence: Int
        public var title: String?
        public var vehicleID: String?
        public var destinationStopID: String?

        public init(
            regionID: Int, stopID: String, tripID: String, serviceDate: Int64, stopSequence: Int, title: String? = nil,
            vehicleID: String? = nil, destinationStopID: String? = nil
        ) {
            self.regionID = regionID
            self.stopID = stopID
            self.tripID = tripID
            self.serviceDate = serviceDate
            self.stopSequence = stopSequence
            self.title = title
            self.vehicleID = vehicleID
            self.destinationStopID = destinationStopID
        }
    }

    /// What an add-region link carries: every parameter the current apps
    /// read. `region-id` is read by iOS 26.3.0 and Android 26.2.0 and later
    /// (without it the app invents an id the sidecar does not know); the
    /// OpenTripPlanner GraphQL values by iOS 26.3.0 and later only. Links
    /// made before these existed decode with them absent.
    public struct AddRegion: Equatable, Sendable {
        public var name: String
        public var obaURL: URL
        /// `region-id`: the id of the region in the sidecar's paths.
        public var regionID: Int64?
        public var otpURL: URL?
        public var otpGraphqlURL: URL?
        /// `otp-graphql-bikeshare`: `true` or `1` (any case) mean true.
        public var otpGraphqlBikeshare: Bool
        public var sidecarURL: URL?
        /// Set only when both an Umami URL and a website id are valid (both or nothing).
        public var umami: (url: URL, id: String)? {
            guard let umamiURL, let umamiID, !umamiID.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
            return (umamiURL, umamiID)
        }
        public var umamiURL: URL?
        public var umamiID: String?

        public init(
            name: String, obaURL: URL, regionID: Int64? = nil, otpURL: URL? = nil, otpGraphqlURL: URL? = nil,
            otpGraphqlBikeshare: Bool = false, sidecarURL: URL? = nil, umamiURL: URL? = nil, umamiID: String? = nil
        ) {
            self.name = name
            self.obaURL = obaURL
            self.regionID = regionID
            self.otpURL = otpURL
            self.otpGraphqlURL = otpGraphqlURL
            self.otpGraphqlBikeshare = otpGraphqlBikeshare
            self.sidecarURL = sidecarURL
            self.umamiURL = umamiURL
            self.umamiID = umamiID
        }

        public static func == (lhs: AddRegion, rhs: AddRegion) -> Bool {
            lhs.name == rhs.name && lhs.obaURL == rhs.obaURL && lhs.regionID == rhs.regionID && lhs.otpURL == rhs.otpURL
                && lhs.otpGraphqlURL == rhs.otpGraphqlURL && lhs.otpGraphqlBikeshare == rhs.otpGraphqlBikeshare
                && lhs.sidecarURL == rhs.sidecarURL && lhs.umamiURL == rhs.umamiURL && lhs.umamiID == rhs.umamiID
        }
    }

    /// Every byte but RFC 3986's unreserved ones percent-encoded, so a value
    /// (a nested URL with `?` and `&`) stays one query item.
    static func encoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// The link as a URL; web links hang off the region's sidecar base URL.
    public func url(sidecarBaseURL: URL? = nil, scheme: String = "onebusaway") -> URL? {
        let base = sidecarBaseURL.map { $0.absoluteString.hasSuffix("/") ? String($0.absoluteString.dropLast()) : $0.absoluteString }
        switch self {
        case .stop(let regionID, let stopID):
            guard let base else { return nil }
            return URL(string: "\(base)/regions/\(regionID)/stops/\(Self.encoded(stopID))")
        case .trip(let trip):
            guard let base else { return nil }
            var query = "trip_id=\(Self.encoded(trip.tripID))&service_date=\(trip.serviceDate / 1000).0&stop_sequence=\(trip.stopSequence)"
            if let title = trip.title { query += "&title=\(Self.encoded(title))" }
            if let vehicle = trip.vehicleID { query += "&vehicle_id=\(Self.encoded(vehicle))" }
            if let destination = trip.destinationStopID { query += "&destination_stop_id=\(Self.encoded(destination))" }
            return URL(string: "\(base)/regions/\(trip.regionID)/stops/\(Self.encoded(trip.stopID))/trips?\(query)")
        case .viewStop(let stopID, let regionID):
            return URL(string: "\(scheme)://view-stop?stopID=\(Self.encoded(stopID))&regionID=\(regionID)")
        case .addRegion(let region):
            var items = [("name", region.name), ("oba-url", region.obaURL.absoluteString)]
            if let id = region.regionID { items.append(("region-id", String(id))) }
            if let sidecar = region.sidecarURL {
                // Android appends "/api/..." to this by concatenation.
                var text = sidecar.absoluteString
                while text.hasSuffix("/") { text.removeLast() }
                items.append(("sidecar-url", text))
            }
            if let otp = region.otpURL { items.append(("otp-url", otp.absoluteString)) }
            if let graphql = region.otpGraphqlURL { items.append(("otp-graphql-url", graphql.absoluteString)) }
            if region.otpGraphqlBikeshare { items.append(("otp-graphql-bikeshare", "true")) }
            if let umami = region.umamiURL { items.append(("umami-url", umami.absoluteString)) }
            if let umamiID = region.umamiID { items.append(("umami-id", umamiID)) }
            return URL(string: "\(scheme)://add-region?" + items.map { "\($0.0)=\(Self.encoded($0.1))" }.joined(separator: "&"))
        }
    }

    /// Reads a link as the apps do; nil for what they would drop.
    /// Custom-scheme links route on the host alone (any scheme); web links
    /// match `/regions/(.*)/stops/(.*)/trips` anywhere in the path, case-insensitively.
    public init?(url: URL) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        let items = components.queryItems ?? []
        func value(_ name: String) -> String? { items.first { $0.name == name }?.value }
        if let scheme = components.scheme?.lowercased(), scheme != "http", scheme != "https" {
            switch components.host {
            case "view-stop":
                guard let stopID = value("stopID"), let regionText = value("regionID"), let regionID = Int(regionText) else { return nil }
                self = .viewStop(stopID: stopID, regionID: regionID)
            case "add-region":
                guard let name = value("name"), let oba = value("oba-url").flatMap(Self.validURL) else { return nil }
                let bikeshare = value("otp-graphql-bikeshare")?.trimmingCharacters(in: .whitespaces).lowercased()
                self = .addRegion(
                    AddRegion(
                        name: name, obaURL: oba,
                        regionID: value("region-id").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) },
                        otpURL: value("otp-url").flatMap(Self.validURL),
                        otpGraphqlURL: value("otp-graphql-url").flatMap(Self.validURL),
                        otpGraphqlBikeshare: bikeshare == "true" || bikeshare == "1",
                        sidecarURL: value("sidecar-url").flatMap(Self.validURL), umamiURL: value("umami-url").flatMap(Self.validURL),
                        umamiID: value("umami-id")?.trimmingCharacters(in: .whitespaces).nilIfEmpty))
            default: return nil
            }
            return
        }
        let path = components.percentEncodedPath
        guard let regions = path.range(of: "/regions/", options: .caseInsensitive),
            let stops = path.range(of: "/stops/", options: .caseInsensitive, range: regions.upperBound..<path.endIndex)
        else { return nil }
        let regionText = String(path[regions.upperBound..<stops.lowerBound])
        let rest = path[stops.upperBound...]
        if let trips = rest.range(of: "/trips", options: .caseInsensitive) {
            let stopText = String(rest[..<trips.lowerBound])
            guard let regionID = Int(regionText), let stopID = stopText.removingPercentEncoding, let tripID = value("trip_id"),
                let dateText = value("service_date"), let seconds = Double(dateText), let sequenceText = value("stop_sequence"),
                let stopSequence = Int(sequenceText)
            else { return nil }
            self = .trip(
                TripLink(
                    regionID: regionID, stopID: stopID, tripID: tripID, serviceDate: Int64((seconds * 1000).rounded()),
                    stopSequence: stopSequence, title: value("title"), vehicleID: value("vehicle_id"),
                    destinationStopID: value("destination_stop_id")))
        } else {
            guard let regionID = Int(regionText), !rest.isEmpty, !rest.contains("/"), let stopID = String(rest).removingPercentEncoding else {
                return nil
            }
            self = .stop(regionID: regionID, stopID: stopID)
        }
    }

    /// The app's rule: non-blank, parses, and has a scheme or starts with `/`.
    static func validURL(_ text: String) -> URL? {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty, let url = URL(string: text) else { return nil }
        return url.scheme != nil || text.hasPrefix("/") ? url : nil
    }
}

extension String {
    /// nil for the empty string.
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
