import Core
import GTFSRealtime
import HTTPServer
import Synchronization

/// Encoded feeds per (region, with test alerts), each tagged with the feed
/// version it was built from. A poll of the versions drops entries an edit
/// made stale, whoever made it (this process or the CLI).
final class AlertFeedCache: Sendable {
    struct Key: Hashable, Sendable {
        let regionID: Int
        let includeTest: Bool
    }
    struct Entry: Sendable {
        let version: Int64
        let message: FeedMessage
        let bytes: [UInt8]
    }
    private let entries = Mutex<[Key: Entry]>([:])

    func entry(_ key: Key) -> Entry? { entries.withLock { $0[key] } }
    func store(_ entry: Entry, for key: Key) { entries.withLock { $0[key] = entry } }
    func invalidate(regionID: Int) { entries.withLock { $0 = $0.filter { $0.key.regionID != regionID } } }

    /// Drops every entry whose region's version moved on.
    func retain(currentVersions: [Int: Int64]) {
        entries.withLock { $0 = $0.filter { currentVersions[$0.key.regionID] ?? 0 == $0.value.version } }
    }
}

/// `GET /api/v1/regions/{id}/alerts` (and `.pb`), `.../alerts.pbtext` (spec §3).
struct AlertFeedRoutes: Sendable {
    let store: AlertStore
    let regions: RegionDirectory
    let cache: AlertFeedCache
    let logger: Logger
    /// Epoch seconds the server started: an untouched region's feed time.
    let serverStart: Int64

    static let contentType = "application/octet-stream"

    var routes: [Route] {
        [Route("GET", "/api/v1/regions/:region/alerts", suffixes: [".pb", ".pbtext"], immediate: cached, handler: feed)]
    }

    /// The cached answer, served on the server's thread without a task.
    func cached(_ request: Request) -> Response? {
        guard request.pathParameters["format"] != ".pbtext", let region = regions.resolve(request) else { return nil }
        let key = AlertFeedCache.Key(regionID: region.id, includeTest: AlertFeedRules.includesTestAlerts(request.parameters["test"]))
        return cache.entry(key).map { Response.bytes(200, contentType: Self.contentType, $0.bytes).logging("region", String(region.id)) }
    }

    func feed(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        let key = AlertFeedCache.Key(regionID: region.id, includeTest: AlertFeedRules.includesTestAlerts(request.parameters["test"]))
        let entry: AlertFeedCache.Entry
        if let cached = cache.entry(key) {
            entry = cached
        } else {
            do {
                let snapshot = try await store.feedSnapshot(regionID: region.id)
                let message = AlertFeedRules.feed(snapshot.alerts, translations: snapshot.translations, includeTest: key.includeTest,
                                                  timestamp: AlertFeedRules.headerTimestamp(lastChange: snapshot.changedAt,
                                                                                            serverStart: serverStart))
                entry = AlertFeedCache.Entry(version: snapshot.version, message: message, bytes: message.encoded())
                cache.store(entry, for: key)
            } catch {
                logger.error("alerts feed could not be read", [("region", String(region.id)), ("error", "\(error)")])
                return Response.json(503, ["error": "Alerts are temporarily unavailable"]).adding(header: "Retry-After", "5")
            }
        }
        if request.pathParameters["format"] == ".pbtext" {
            return Response.bytes(200, contentType: "text/plain; charset=utf-8", Array(entry.message.jsonText().utf8))
                .logging("region", String(region.id))
        }
        return Response.bytes(200, contentType: Self.contentType, entry.bytes).logging("region", String(region.id))
    }
}

/// Polls the feed versions so edits made by other processes reach the cache.
struct AlertFeedVersionWatcher: Sendable {
    let store: AlertStore
    let cache: AlertFeedCache
    let clock: any WallClock
    // Four times a second: an edit through any instance (or the CLI) is in
    // every instance's feed well within a second.
    var intervalSeconds: Double = 0.25

    func run(stop: StopSignal? = nil) async {
        await clock.repeatEvery(seconds: intervalSeconds, stop: stop) { await refresh() }
    }

    func refresh() async {
        if let versions = try? await store.feedVersions() { cache.retain(currentVersions: versions) }
    }
}
