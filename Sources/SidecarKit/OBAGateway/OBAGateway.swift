import Core
import OBA

/// The OneBusAway REST API of each region: base URL from the regions
/// directory, API key from `--oba-api-key`, overridable per region.
public struct OBAGateway: Sendable {
    let client: OBAClient
    let defaultKey: String?
    let regionKeys: [Int: String]

    public init(client: OBAClient, defaultKey: String?, regionKeys: [Int: String]) {
        self.client = client
        self.defaultKey = defaultKey
        self.regionKeys = regionKeys
    }

    func key(for region: Region) -> String? { regionKeys[region.id] ?? defaultKey }

    func baseURL(_ region: Region) throws(OBAError) -> String {
        guard let base = region.obaBaseURL else { throw .transient("region \(region.id) has no obaBaseUrl") }
        return base
    }

    public func arrivalAndDeparture(region: Region, stopID: String, tripID: String, serviceDate: Int64, vehicleID: String?,
                                    stopSequence: Int?) async throws(OBAError) -> OBAResponse<ArrivalAndDeparture> {
        try await client.arrivalAndDeparture(baseURL: try baseURL(region), apiKey: key(for: region), stopID: stopID, tripID: tripID,
                                             serviceDate: serviceDate, vehicleID: vehicleID, stopSequence: stopSequence)
    }

    public func agenciesWithCoverage(region: Region) async throws(OBAError) -> [AgencyCoverage] {
        try await client.agenciesWithCoverage(baseURL: try baseURL(region), apiKey: key(for: region))
    }

    public func vehicleIDs(region: Region, agencyID: String) async throws(OBAError) -> [String] {
        try await client.vehicleIDs(baseURL: try baseURL(region), apiKey: key(for: region), agencyID: agencyID)
    }

    public func tripDetails(region: Region, tripID: String, serviceDate: Int64?) async throws(OBAError) -> OBAResponse<JSONValue> {
        try await client.tripDetails(baseURL: try baseURL(region), apiKey: key(for: region), tripID: tripID, serviceDate: serviceDate)
    }

    public func arrivalsAndDepartures(region: Region, stopID: String, minutesBefore: Int,
                                      minutesAfter: Int) async throws(OBAError) -> OBAResponse<StopArrivals> {
        try await client.arrivalsAndDepartures(baseURL: try baseURL(region), apiKey: key(for: region), stopID: stopID,
                                               minutesBefore: minutesBefore, minutesAfter: minutesAfter)
    }
}
