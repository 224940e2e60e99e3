import Core
import Crypto
import GTFSRealtime
import HTTPServer
import Synchronization

/// Feeds per (region, with test alerts), each tagged with the feed version
/// it was built from. A poll of the versions drops entries an edit made
/// stale, whoever made it (this process or the CLI). Each entry keeps its
/// encoding for the current minute's header stamp, so a request costs a
/// lookup and the encoding is redone once a minute.
final class AlertFeedCache: Sendable {
    struct Key: Hashable, Sendable {
        let regionID: Int
        let includeTest: Bool
    }
    struct Entry: Sendable {
        let version: Int64
        /// The feed with its header stamp unset: stamped per minute.
        let message: FeedMessage
        /// When the region's alerts last changed (epoch seconds): `Last-Modified`.
        let changedAt: Int64
        var rendition: Rendition? = nil
    }
    /// The feed stamped for one minute, encoded, with its validators.
    struct Rendition: Sendable {
        let stamp: Int64
        let message: FeedMessage
        let bytes: [UInt8]
        let validators: Validators
    }
    private let entries = Mutex<[Key: Entry]>([:])

    func entry(_ key: Key) -> Entry? { entries.withLock { $0[key] } }
    func store(_ entry: Entry, for key: Key) { entries.withLock { $0[key] = entry } }
    func invalidate(regionID: Int) { entries.withLock { $0 = $0.filter { $0.key.regionID != regionID } } }

    /// Drops every entry whose region's version moved on.
    func retain(currentVersions: [Int: Int64]) {
        entries.withLock { $0 = $0.filter { currentVersions[$0.key.regionID] ?? 0 == $0.value.version } }
    }

    /// The cached feed stamped `stamp`, encoding it when the minute moved on.
    func rendition(_ key: Key, stamp: Int64) -> Rendition? {
        entries.withLock { entries -> Rendition? in
            guard var entry = entries[key] else { return nil }
            if let rendition = entry.rendition, rendition.stamp == stamp { return rendition }
            let rendition = Self.render(entry, key: key, stamp: stamp)
            entry.rendition = rendition
            entries[key] = entry
            return rendition
        }
    }

    static func render(_ entry: Entry, key: Key, stamp: Int64) -> Rendition {
        var message = entry.message
        message.header.timestamp = UInt64(max(stamp, 0))
        let bytes = message.encoded()
        // Strong, and distinct per region and variant even when two feeds
        // encode alike; it changes with every content change and every stamp.
        let digest = Hex.encode(Array(SHA256.digest(bytes).prefix(12)))
        let etag = "\"\(key.regionID)-\(key.includeTest ? "t" : "p")-\(digest)\""
        return Rendition(stamp: stamp, message: message, bytes: bytes, validators: Validators(etag: etag, lastModified: entry.changedAt))
    }
}

/// `GET /api/v1/regions/{id}/alerts` (and `.pb`), `.../alerts.pbtext` (spec §3).
/// Conditional GETs and caching headers let a CDN or nginx hold the feed.
struct AlertFeedRoutes: Sendable {
    let store: AlertStore
    let regions: RegionDirectory
    let cache: AlertFeedCache
    let clock: any WallClock
    let logger: Logger
    /// Epoch seconds the server started: an untouched region's `Last-Modified`.
    let serverStart: Int64
    let watcher: AlertFeedVersionWatcher

    static let contentType = "application/octet-stream"
    /// A cache may serve a copy for a minute (the header stamp's own
    /// granularity), and for ten more when this server fails.
    static let cacheControl = "public, max-age=60, stale-if-error=600"

    var routes: [Route] {
        [Route("GET", "/api/v1/regions/:region/alerts", suffixes: [".pb", ".pbtext"], immediate: cached, handler: feed)]
    }

    /// The header stamp of this moment: the time rounded down to the minute
    /// (never ahead of the clock).
    var stamp: Int64 { AlertFeedRules.headerTimestamp(nowSeconds: clock.now().epochMillis / 1000) }

    static func key(_ request: Request, region: Region) -> AlertFeedCache.Key {
        AlertFeedCache.Key(regionID: region.id, includeTest: AlertFeedRules.includesTestAlerts(request.parameters["test"]))
    }

    /// The cached answer (a 304 included), served on the server's thread without a task.
    func cached(_ request: Request) -> Response? {
        guard request.pathParameters["format"] != ".pbtext", let region = regions.resolve(request),
            let rendition = cache.rendition(Self.key(request, region: region), stamp: stamp)
        else { return nil }
        return answer(request, rendition, region: region)
    }

    func feed(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return Response.regionNotFound.adding(header: "Cache-Control", "no-store") }
        let key = Self.key(request, region: region)
        if cache.entry(key) == nil {
            do {
                cache.store(try await entry(region: region, key: key), for: key)
            } catch {
                logger.error("alerts feed could not be read", [("region", String(region.id)), ("error", "\(error)")])
                return Response.json(503, ["error": "Alerts are temporarily unavailable"]).adding(header: "Retry-After", "5")
                    .adding(header: "Cache-Control", "no-store")
            }
        }
        guard let rendition = cache.rendition(key, stamp: stamp) else {
            // Invalidated between the store and now: build it for this request alone.
            return await feedUncached(request, region: region, key: key)
        }
        return answer(request, rendition, region: region)
    }

    private func feedUncached(_ request: Request, region: Region, key: AlertFeedCache.Key) async -> Response {
        do {
            return answer(request, AlertFeedCache.render(try await entry(region: region, key: key), key: key, stamp: stamp), region: region)
        } catch {
            logger.error("alerts feed could not be read", [("region", String(region.id)), ("error", "\(error)")])
            return Response.json(503, ["error": "Alerts are temporarily unavailable"]).adding(header: "Retry-After", "5")
                .adding(header: "Cache-Control", "no-store")
        }
    }

    /// The feed as stored now, for one cache key.
    private func entry(region: Region, key: AlertFeedCache.Key) async throws -> AlertFeedCache.Entry {
        let includeTest = key.includeTest
        let snapshot = try await store.feedSnapshot(regionID: region.id) { AlertFeedRules.visible($0, includeTest: includeTest) }
        let message = AlertFeedRules.feed(
            snapshot.alerts, translations: snapshot.translations, mirrored: snapshot.mirrored, includeTest: includeTest, timestamp: 0)
        return AlertFeedCache.Entry(
            version: snapshot.version, message: message, changedAt: snapshot.changedAt.flatMap { $0 > 0 ? $0 : nil } ?? serverStart)
    }

    /// 304 when the client's copy is current, else the feed in the asked format.
    func answer(_ request: Request, _ rendition: AlertFeedCache.Rendition, region: Region) -> Response {
        let text = request.pathParameters["format"] == ".pbtext"
        var validators = rendition.validators
        // The text rendering is another representation: its own tag.
        if text { validators.etag = String(validators.etag.dropLast()) + "-text\"" }
        if validators.notModified(request) {
            return Response.notModified(validators, cacheControl: Self.cacheControl).logging("region", String(region.id))
        }
        let response =
            text
            ? Response.bytes(200, contentType: "text/plain; charset=utf-8", Array(rendition.message.jsonText().utf8))
            : Response.bytes(200, contentType: Self.contentType, rendition.bytes)
        return response.cached(validators, cacheControl: Self.cacheControl).logging("region", String(region.id))
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
    /// The server's stop signal: the loop ends once it is raised.
    var stop: StopSignal? = nil

    func run() async {
        await clock.repeatEvery(seconds: intervalSeconds, stop: stop) { await refresh() }
    }

    func refresh() async {
        if let versions = try? await store.feedVersions() { cache.retain(currentVersions: versions) }
    }
}

extension AlertFeedRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            store: context.stores.alerts, regions: context.regions, cache: context.alertFeedCache, clock: context.clock, logger: context.logger,
            serverStart: context.clock.now().epochMillis / 1000,
            watcher: AlertFeedVersionWatcher(store: context.stores.alerts, cache: context.alertFeedCache, clock: context.clock, stop: context.stop))
    }

    /// Notices edits made by other processes (the CLI, other instances).
    var jobs: [BackgroundJob] { [BackgroundJob(name: "alert feed watcher", run: watcher.run)] }
}
