import Core
import OBA
import Synchronization

/// The OneBusAway REST API of each region: base URL from the regions
/// directory, API key from `--oba-api-key`, overridable per region.
struct OBAGateway: Sendable {
    let client: OBAClient
    let defaultKey: String?
    let regionKeys: [Int: String]
    /// At `debug`, one line per request: method, id, outcome, time (never
    /// the URL, whose query carries the API key).
    let logger: Logger
    /// Where this process reaches a region's server when that differs from
    /// the directory's URL (the demo region's server is this process).
    let localBaseURLs = LocalBaseURLs()

    init(client: OBAClient, defaultKey: String?, regionKeys: [Int: String], logger: Logger = Logger(level: .error)) {
        self.client = client
        self.defaultKey = defaultKey
        self.regionKeys = regionKeys
        self.logger = logger
    }

    /// Runs one request, logging its outcome and duration at debug.
    private func timed<Result>(
        _ method: String, _ id: String, region: Region,
        _ call: () async throws(OBAError) -> Result
    ) async throws(OBAError) -> Result {
        guard logger.isEnabled(.debug) else { return try await call() }
        let started = ContinuousClock.now
        let outcome: String
        defer {
            logger.debug(
                "upstream request",
                [
                    ("upstream", "oba"), ("region", String(region.id)), ("method", method), ("id", id),
                    ("outcome", outcome), ("duration_ms", String((ContinuousClock.now - started).wholeMilliseconds)),
                ])
        }
        do {
            let result = try await call()
            outcome = "ok"
            return result
        } catch {
            outcome = error == .notFound ? "not found" : "failed: \(error)"
            throw error
        }
    }

    func key(for region: Region) -> String? { regionKeys[region.id] ?? defaultKey }

    func baseURL(_ region: Region) throws(OBAError) -> String {
        if let local = localBaseURLs.url(for: region.id) { return local }
        guard let base = region.obaBaseURL else { throw .transient("region \(region.id) has no obaBaseUrl") }
        return base
    }

    func arrivalAndDeparture(
        region: Region, stopID: String, tripID: String, serviceDate: EpochMillis, vehicleID: String?,
        stopSequence: Int?
    ) async throws(OBAError) -> OBAResponse<ArrivalAndDeparture> {
        try await timed("arrival-and-departure-for-stop", stopID, region: region) { () async throws(OBAError) in
            try await client.arrivalAndDeparture(
                baseURL: try baseURL(region), apiKey: key(for: region), stopID: stopID, tripID: tripID,
                serviceDate: serviceDate.value, vehicleID: vehicleID, stopSequence: stopSequence)
        }
    }

    func agenciesWithCoverage(region: Region) async throws(OBAError) -> [AgencyCoverage] {
        try await timed("agencies-with-coverage", "", region: region) { () async throws(OBAError) in
            try await client.agenciesWithCoverage(baseURL: try baseURL(region), apiKey: key(for: region))
        }
    }

    /// Whether the region's server knows a route, stop or trip (`route`,
    /// `stop`, `trip` methods); throws `.notFound` when it does not.
    func entity(region: Region, method: String, id: String, timeoutSeconds: Int) async throws(OBAError) {
        try await timed(method, id, region: region) { () async throws(OBAError) in
            try await client.entity(baseURL: try baseURL(region), apiKey: key(for: region), method: method, id: id, timeoutSeconds: timeoutSeconds)
        }
    }

    func vehicleIDs(region: Region, agencyID: String) async throws(OBAError) -> [String] {
        try await timed("vehicles-for-agency", agencyID, region: region) { () async throws(OBAError) in
            try await client.vehicleIDs(baseURL: try baseURL(region), apiKey: key(for: region), agencyID: agencyID)
        }
    }

    func tripDetails(region: Region, tripID: String, serviceDate: EpochMillis?) async throws(OBAError) -> OBAResponse<JSONValue> {
        try await timed("trip-details", tripID, region: region) { () async throws(OBAError) in
            try await client.tripDetails(baseURL: try baseURL(region), apiKey: key(for: region), tripID: tripID, serviceDate: serviceDate?.value)
        }
    }

    func arrivalsAndDepartures(
        region: Region, stopID: String, minutesBefore: Int,
        minutesAfter: Int
    ) async throws(OBAError) -> OBAResponse<StopArrivals> {
        try await timed("arrivals-and-departures-for-stop", stopID, region: region) { () async throws(OBAError) in
            try await client.arrivalsAndDepartures(
                baseURL: try baseURL(region), apiKey: key(for: region), stopID: stopID,
                minutesBefore: minutesBefore, minutesAfter: minutesAfter)
        }
    }
}

/// Base URLs by region id that override the directory's, for this process.
final class LocalBaseURLs: Sendable {
    private let urls = Mutex<[Int: String]>([:])
    func set(_ url: String, for regionID: Int) { urls.withLock { $0[regionID] = url } }
    func url(for regionID: Int) -> String? { urls.withLock { $0[regionID] } }
}
