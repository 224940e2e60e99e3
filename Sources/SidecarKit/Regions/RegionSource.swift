import Core
import FoundationEssentials
import HTTPClient
import HTTPServer
import Synchronization

/// Where the regions directory comes from: `--regions` as a file path or an
/// http(s) URL, or the bundled sample when none is given.
enum RegionSource: Sendable, Equatable {
    case bundledSample
    case file(String)
    case url(String)

    /// Reads `--regions`: an http(s) URL or a path.
    init(argument: String?) {
        guard let argument, !argument.isEmpty else {
            self = .bundledSample
            return
        }
        let lowered = argument.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { self = .url(argument) } else { self = .file(argument) }
    }

    /// A name for logs.
    var label: String {
        switch self {
        case .bundledSample: return "bundled sample"
        case .file(let path): return path
        case .url(let url): return url
        }
    }

    /// Fetches and parses the directory.
    func load(client: HTTPClient) async throws(RegionsDocumentError) -> [Region] {
        try RegionsDocument.parse(try await fetch(client: client))
    }

    /// The directory's bytes, unparsed.
    func fetch(client: HTTPClient) async throws(RegionsDocumentError) -> [UInt8] {
        let bytes: [UInt8]
        switch self {
        case .bundledSample:
            bytes = Array(SampleRegions.json.utf8)
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw RegionsDocumentError("cannot read regions file \(path)")
            }
            bytes = [UInt8](data)
        case .url(let url):
            // A request that timed out is tried twice more at once: one slow
            // answer from the directory's host (at boot, under load) should
            // not stop a server from starting; any other failure is final.
            var attempt = 1
            let response: HTTPClientResponse
            while true {
                do {
                    response = try await client.get(url, upstream: "regions")
                    break
                } catch {
                    guard (error as? HTTPClientError)?.isTimeout == true, attempt < 3 else {
                        throw RegionsDocumentError("cannot fetch \(url): \(error)")
                    }
                    attempt += 1
                }
            }
            guard response.status == 200 else { throw RegionsDocumentError("fetching \(url) answered HTTP \(response.status)") }
            bytes = response.body
        }
        return bytes
    }
}

/// Re-reads a URL directory periodically; a bad refresh keeps the last good
/// directory and says why in the log.
struct RegionRefresher: Sendable {
    let source: RegionSource
    let directory: RegionDirectory
    let client: HTTPClient
    let intervalSeconds: Double
    let clock: any WallClock
    let logger: Logger
    /// With several instances on one database: one instance at a time (the
    /// holder of a lease) fetches the URL and stores what it read; every
    /// instance applies the stored copy.
    var coordination: CoordinationStore? = nil
    /// The server's stop signal: the loop ends once it is raised.
    var stop: StopSignal? = nil

    /// Runs until cancelled or stopped.
    func run() async {
        guard case .url = source, intervalSeconds > 0 else { return }
        while !Task.isCancelled && !(stop?.isStopping ?? false) {
            do { try await clock.sleep(seconds: intervalSeconds) } catch { return }
            await refreshOnce()
        }
    }

    /// When the stored copy this instance applied was fetched.
    let applied = RefreshMark()
    static let documentName = "regions-directory"

    /// One refresh; returns true when the directory was replaced.
    @discardableResult
    func refreshOnce() async -> Bool {
        guard let coordination else { return await fetchAndApply() }
        let now = clock.nowSeconds
        if (try? await coordination.acquire("regions-refresh", ttlSeconds: max(Int64(intervalSeconds) - 1, 1), nowSeconds: now)) == true {
            return await fetchAndApply(storingIn: coordination, now: now)
        }
        guard let stored = try? await coordination.document(Self.documentName), stored.fetchedAt > applied.value,
            let regions = try? RegionsDocument.parse(stored.body)
        else { return false }
        directory.replace(with: regions)
        applied.set(stored.fetchedAt)
        logger.info("regions directory refreshed from the copy another instance fetched", [("regions", String(regions.count))])
        return true
    }

    private func fetchAndApply(storingIn coordination: CoordinationStore? = nil, now: EpochSeconds = 0) async -> Bool {
        do {
            let bytes = try await source.fetch(client: client)
            let regions = try RegionsDocument.parse(bytes)
            directory.replace(with: regions)
            if let coordination {
                try? await coordination.storeDocument(Self.documentName, body: bytes, nowSeconds: now)
                applied.set(now)
            }
            logger.info("regions directory refreshed", [("regions", String(regions.count))])
            return true
        } catch {
            logger.warning("regions refresh failed; keeping the last good directory", [("reason", error.description)])
            return false
        }
    }
}

/// An instant one loop updates and reads (when a shared copy was applied).
final class RefreshMark: Sendable {
    private let mark = Mutex<EpochSeconds>(0)
    var value: EpochSeconds { mark.withLock { $0 } }
    func set(_ value: EpochSeconds) { mark.withLock { $0 = value } }
}

extension RegionRefresher: Feature {
    init(_ context: FeatureContext, source: RegionSource, client: HTTPClient) {
        self.init(
            source: source, directory: context.regions, client: client, intervalSeconds: Double(context.configuration.regionsRefreshSeconds),
            clock: context.clock, logger: context.logger, coordination: context.coordination, stop: context.stop)
    }

    /// Re-reads a URL directory every `--regions-refresh` seconds.
    var jobs: [BackgroundJob] { [BackgroundJob(name: "regions refresh", run: run)] }
}
