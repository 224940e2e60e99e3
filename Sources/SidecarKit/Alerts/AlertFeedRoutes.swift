import Core
import Crypto
import GTFSRealtime
import HTTPServer
import Synchronization

/// Feeds per (region, with test alerts), each tagged with the feed version
/// it was built from and good until its selection changes by itself (an
/// alert starting or ending). A poll of the versions drops entries an edit
/// made stale, whoever made it (this process or the CLI). Each entry keeps
/// its encodings, so a request costs a lookup.
final class AlertFeedCache: Sendable {
    struct Key: Hashable, Sendable {
        let regionID: Int
        let includeTest: Bool
    }
    struct Entry: Sendable {
        let version: Int64
        let message: FeedMessage
        let bytes: [UInt8]
        /// The same bytes gzipped (nil if zlib failed: served as they are).
        let gzipped: [UInt8]?
        let validators: Validators
        /// When the selection changes without an edit (nil: never).
        let validUntil: EpochSeconds?

        init(version: Int64, selection: AlertFeedSelection, key: Key) {
            self.version = version
            message = AlertFeedRules.feed(selection)
            bytes = message.encoded()
            gzipped = Gzip.compress(bytes)
            // Strong, and distinct per region and variant even when two feeds
            // encode alike; it changes with the bytes and only with them.
            let digest = Hex.encode(Array(SHA256.digest(bytes).prefix(12)))
            validators = Validators(etag: "\"\(key.regionID)-\(key.includeTest ? "t" : "p")-\(digest)\"", lastModified: selection.stamp.value)
            validUntil = selection.nextChange
        }

        func current(at now: EpochSeconds) -> Bool { validUntil.map { now < $0 } ?? true }
    }
    private let entries = Mutex<[Key: Entry]>([:])

    /// The entry for a key while it is still current.
    func entry(_ key: Key, now: EpochSeconds) -> Entry? { entries.withLock { $0[key] }.flatMap { $0.current(at: now) ? $0 : nil } }
    func store(_ entry: Entry, for key: Key) { entries.withLock { $0[key] = entry } }
    func invalidate(regionID: Int) { entries.withLock { $0 = $0.filter { $0.key.regionID != regionID } } }

    /// Drops every entry whose region's version moved on.
    func retain(currentVersions: [Int: Int64]) {
        entries.withLock { $0 = $0.filter { currentVersions[$0.key.regionID] ?? 0 == $0.value.version } }
    }
}

/// `GET /api/v1/regions/{id}/alerts` (and `.pb`), `.../alerts.pbtext` (spec §3).
/// Conditional GETs, gzip for clients that ask (both apps do:
/// OneBusAway/onebusaway-ios `APIService+GetData.swift:69`, and Android's
/// `HttpURLConnection` by default) and caching headers let a CDN or nginx
/// hold the feed.
struct AlertFeedRoutes: Sendable {
    let store: AlertStore
    let regions: RegionDirectory
    let cache: AlertFeedCache
    let clock: any WallClock
    let logger: Logger
    /// Epoch seconds the server started: an untouched region's stamp.
    let serverStart: EpochSeconds
    let watcher: AlertFeedVersionWatcher

    static let contentType = "application/octet-stream"
    /// A cache may serve a copy for a minute, and for ten more when this
    /// server fails; each representation (gzip or not) is its own.
    static let cacheControl = "public, max-age=60, stale-if-error=600"

    var routes: [Route] {
        [Route("GET", "/api/v1/regions/:region/alerts", suffixes: [".pb", ".pbtext"], immediate: cached, handler: feed)]
    }

    private var now: EpochSeconds { clock.nowSeconds }

    static func key(_ request: Request, region: Region) -> AlertFeedCache.Key {
        AlertFeedCache.Key(regionID: region.id, includeTest: AlertFeedRules.includesTestAlerts(request.parameters["test"]))
    }

    /// The cached answer (a 304 included), served on the server's thread without a task.
    func cached(_ request: Request) -> Response? {
        guard let region = regions.resolve(request), let entry = cache.entry(Self.key(request, region: region), now: now) else { return nil }
        return answer(request, entry, region: region)
    }

    func feed(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return Response.regionNotFound.adding(header: "Cache-Control", "no-store") }
        let key = Self.key(request, region: region)
        if let entry = cache.entry(key, now: now) { return answer(request, entry, region: region) }
        do {
            let entry = try await entry(region: region, key: key)
            cache.store(entry, for: key)
            return answer(request, entry, region: region)
        } catch {
            logger.error("alerts feed could not be read", [("region", String(region.id)), ("error", "\(error)")])
            return Response.json(503, ["error": "Alerts are temporarily unavailable"]).adding(header: "Retry-After", "5")
                .adding(header: "Cache-Control", "no-store")
        }
    }

    /// The feed as stored now, for one cache key.
    private func entry(region: Region, key: AlertFeedCache.Key) async throws -> AlertFeedCache.Entry {
        let snapshot = try await store.feedSnapshot(regionID: region.id)
        let selection = AlertFeedSelection.select(
            snapshot.alerts, translations: snapshot.translations, mirrored: snapshot.mirrored, includeTest: key.includeTest, now: now,
            changedAt: snapshot.changedAt.flatMap { $0 > 0 ? $0 : nil } ?? serverStart)
        return AlertFeedCache.Entry(version: snapshot.version, selection: selection, key: key)
    }

    /// 304 when the client's copy is current, else the feed in the asked
    /// format and encoding. Each encoding has its own ETag (a strong tag
    /// names one sequence of bytes), and `Vary` tells caches to keep them apart.
    func answer(_ request: Request, _ entry: AlertFeedCache.Entry, region: Region) -> Response {
        let text = request.pathParameters["format"] == ".pbtext"
        let gzip = !text && entry.gzipped != nil && Gzip.accepted(by: request.header("accept-encoding"))
        var validators = entry.validators
        // Another representation: its own tag.
        if text { validators.etag = String(validators.etag.dropLast()) + "-text\"" }
        if gzip { validators.etag = String(validators.etag.dropLast()) + "-gz\"" }
        if validators.notModified(request) {
            let length = text ? entry.message.jsonText().utf8.count : gzip ? (entry.gzipped ?? entry.bytes).count : entry.bytes.count
            return Response.notModified(validators, cacheControl: Self.cacheControl, representationLength: length)
                .adding(header: "Vary", "Accept-Encoding").logging("region", String(region.id))
        }
        var response =
            text
            ? Response.bytes(200, contentType: "text/plain; charset=utf-8", Array(entry.message.jsonText().utf8))
            : Response.bytes(200, contentType: Self.contentType, gzip ? entry.gzipped ?? entry.bytes : entry.bytes)
        if gzip { response = response.adding(header: "Content-Encoding", "gzip") }
        return response.cached(validators, cacheControl: Self.cacheControl).adding(header: "Vary", "Accept-Encoding")
            .logging("region", String(region.id))
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
            serverStart: context.clock.nowSeconds,
            watcher: AlertFeedVersionWatcher(store: context.stores.alerts, cache: context.alertFeedCache, clock: context.clock, stop: context.stop))
    }

    /// Notices edits made by other processes (the CLI, other instances).
    var jobs: [BackgroundJob] { [BackgroundJob(name: "alert feed watcher", run: watcher.run)] }
}
