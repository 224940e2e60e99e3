import FoundationEssentials
import Synchronization

/// Why a regions document was refused.
public struct RegionsDocumentError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Parses regions-v3.json (`{"data": {"list": [...]}}`). Only the fields the
/// sidecar uses are read; the rest of each entry is ignored.
public enum RegionsDocument {
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
    }

    public static func parse(_ bytes: [UInt8]) throws(RegionsDocumentError) -> [Region] {
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
            regions.append(Region(id: entry.id, name: entry.regionName,
                                  obaBaseURL: entry.obaBaseUrl?.presence, sidecarBaseURL: entry.sidecarBaseUrl?.presence,
                                  bounds: entry.bounds ?? []))
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
public final class RegionDirectory: Sendable {
    private let regions: Mutex<[Int: Region]>
    /// Regions this process adds itself (the demo): kept when the directory
    /// is re-read.
    private let pinned = Mutex<[Int: Region]>([:])

    public init(_ regions: [Region]) {
        self.regions = Mutex(Dictionary(regions.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }))
    }

    /// The region with this id, if served.
    public func region(id: Int) -> Region? { regions.withLock { $0[id] } }

    /// The region a path segment names (bare id or id-prefixed slug).
    public func region(pathSegment: String) -> Region? {
        RegionPath.regionID(fromSegment: pathSegment).flatMap(region(id:))
    }

    /// Every region, by id.
    public var all: [Region] { regions.withLock { $0.values.sorted { $0.id < $1.id } } }

    /// Swaps in a newly read directory (pinned regions stay).
    public func replace(with newRegions: [Region]) {
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
