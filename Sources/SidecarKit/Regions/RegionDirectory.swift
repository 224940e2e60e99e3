import FoundationEssentials
import Synchronization

/// Why a regions document was refused.
struct RegionsDocumentError: Error, CustomStringConvertible, Equatable {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Parses regions-v3.json (`{"data": {"list": [...]}}`). Only the fields the
/// sidecar uses are read; the rest of each entry is ignored.
enum RegionsDocument {
    private struct Document: Decodable {
        struct Payload: Decodable { let list: [Entry] }
        let data: Payload
    }

    private struct Entry: Decodable {
        let id: Int
        let regionName: String
        let obaBaseUrl: String?
        let sidecarBaseUrl: String?
        let bounds: [Region.Bounds]?
        let tripPlanner: Region.TripPlanner
        let analytics: Region.Analytics?

        enum Keys: String, CodingKey {
            case id, regionName, obaBaseUrl, sidecarBaseUrl, bounds, otpBaseUrl, otpBaseGraphqlUrl, supportsOtpGraphqlBikeshare, umamiAnalytics
        }
        struct Umami: Decodable {
            let url: String?
            let id: String?
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            id = try container.decode(Int.self, forKey: .id)
            regionName = try container.decode(String.self, forKey: .regionName)
            obaBaseUrl = try container.decodeIfPresent(String.self, forKey: .obaBaseUrl)
            sidecarBaseUrl = try container.decodeIfPresent(String.self, forKey: .sidecarBaseUrl)
            bounds = try container.decodeIfPresent([Region.Bounds].self, forKey: .bounds)
            // What only links carry is read leniently: a directory whose
            // analytics entry has an odd shape still serves every region.
            tripPlanner = Region.TripPlanner(
                restURL: (try? container.decodeIfPresent(String.self, forKey: .otpBaseUrl))?.flatMap { $0.presence },
                graphqlURL: (try? container.decodeIfPresent(String.self, forKey: .otpBaseGraphqlUrl))?.flatMap { $0.presence },
                graphqlBikeshare: (try? container.decodeIfPresent(Bool.self, forKey: .supportsOtpGraphqlBikeshare)).flatMap { $0 } ?? false)
            if let umami = (try? container.decodeIfPresent(Umami.self, forKey: .umamiAnalytics)).flatMap({ $0 }),
                let url = umami.url?.presence, let site = umami.id?.presence
            {
                analytics = Region.Analytics(url: url, siteID: site)
            } else {
                analytics = nil
            }
        }
    }

    static func parse(_ bytes: [UInt8]) throws(RegionsDocumentError) -> [Region] {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw RegionsDocumentError("not a regions-v3 document: \(explain(error))")
        } catch {
            throw RegionsDocumentError("not a regions-v3 document: \(error)")
        }
        guard !document.data.list.isEmpty else { throw RegionsDocumentError("the regions list is empty") }
        var seen = Set<Int>()
        var regions: [Region] = []
        for entry in document.data.list {
            guard entry.id >= 0 else { throw RegionsDocumentError("region id \(entry.id) is negative") }
            guard seen.insert(entry.id).inserted else { throw RegionsDocumentError("region id \(entry.id) appears twice") }
            regions.append(
                Region(
                    id: entry.id, name: entry.regionName,
                    obaBaseURL: entry.obaBaseUrl?.presence, sidecarBaseURL: entry.sidecarBaseUrl?.presence,
                    bounds: entry.bounds ?? [], tripPlanner: entry.tripPlanner, analytics: entry.analytics))
        }
        return regions
    }

    private static func explain(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "missing \(path(context.codingPath + [key]))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context.codingPath)): \(context.debugDescription)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "invalid JSON" : "invalid value at \(path(context.codingPath))"
        @unknown default:
            return "unreadable"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        let joined = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return joined.hasPrefix(".") ? String(joined.dropFirst()) : joined
    }
}

/// The regions this sidecar serves, replaceable as a whole when the
/// directory is re-read.
final class RegionDirectory: Sendable {
    private let regions: Mutex<[Int: Region]>
    /// Regions this process adds itself (the demo): kept when the directory
    /// is re-read.
    private let pinned = Mutex<[Int: Region]>([:])

    init(_ regions: [Region]) {
        self.regions = Mutex(Dictionary(regions.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }))
    }

    /// The region with this id, if served.
    func region(id: Int) -> Region? { regions.withLock { $0[id] } }

    /// The region a path segment names (bare id or id-prefixed slug).
    func region(pathSegment: String) -> Region? {
        RegionPath.regionID(fromSegment: pathSegment).flatMap(region(id:))
    }

    /// Every region, by id.
    var all: [Region] { regions.withLock { $0.values.sorted { $0.id < $1.id } } }

    /// Swaps in a newly read directory (pinned regions stay).
    func replace(with newRegions: [Region]) {
        var table = Dictionary(newRegions.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        table.merge(pinned.withLock { $0 }) { _, pinned in pinned }
        regions.withLock { $0 = table }
    }

    /// Adds (or updates) a region that re-reading the directory keeps.
    func pin(_ region: Region) {
        pinned.withLock { $0[region.id] = region }
        regions.withLock { $0[region.id] = region }
    }
}
