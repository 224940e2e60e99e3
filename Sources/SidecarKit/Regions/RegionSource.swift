import FoundationEssentials
import HTTPClient
import HTTPServer

/// Where the regions directory comes from: `--regions` as a file path or an
/// http(s) URL, or the bundled sample when none is given.
public enum RegionSource: Sendable, Equatable {
    case bundledSample
    case file(String)
    case url(String)

    /// Reads `--regions`: an http(s) URL or a path.
    public init(argument: String?) {
        guard let argument, !argument.isEmpty else { self = .bundledSample; return }
        let lowered = argument.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { self = .url(argument) } else { self = .file(argument) }
    }

    /// A name for logs.
    public var label: String {
        switch self {
        case .bundledSample: return "bundled sample"
        case .file(let path): return path
        case .url(let url): return url
        }
    }

    /// Fetches and parses the directory.
    public func load(client: HTTPClient) async throws(RegionsDocumentError) -> [Region] {
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
            let response: HTTPClientResponse
            do { response = try await client.get(url) } catch {
                throw RegionsDocumentError("cannot fetch \(url): \(error)")
            }
            guard response.status == 200 else { throw RegionsDocumentError("fetching \(url) answered HTTP \(response.status)") }
            bytes = response.body
        }
        return try RegionsDocument.parse(bytes)
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

    /// Runs until cancelled or stopped.
    func run(stop: StopSignal? = nil) async {
        guard case .url = source, intervalSeconds > 0 else { return }
        while !Task.isCancelled && !(stop?.isStopping ?? false) {
            do { try await clock.sleep(seconds: intervalSeconds) } catch { return }
            await refreshOnce()
        }
    }

    /// One refresh; returns true when the directory was replaced.
    @discardableResult
    func refreshOnce() async -> Bool {
        do {
            let regions = try await source.load(client: client)
            directory.replace(with: regions)
            logger.info("regions directory refreshed", [("regions", String(regions.count))])
            return true
        } catch {
            logger.warning("regions refresh failed; keeping the last good directory", [("reason", error.description)])
            return false
        }
    }
}
