import Core
import FoundationEssentials
import HTTPClient

/// A client of one or more OneBusAway REST API servers (`/api/where/...`).
public struct OBAClient: Sendable {
    let http: HTTPClient

    public init(http: HTTPClient) { self.http = http }

    /// `arrival-and-departure-for-stop`: one trip's visit to one stop.
    public func arrivalAndDeparture(
        baseURL: String, apiKey: String?, stopID: String, tripID: String, serviceDate: Int64,
        vehicleID: String?, stopSequence: Int?
    ) async throws(OBAError) -> OBAResponse<ArrivalAndDeparture> {
        var query = [("tripId", tripID), ("serviceDate", String(serviceDate))]
        if let vehicleID, !vehicleID.isEmpty { query.append(("vehicleId", vehicleID)) }
        if let stopSequence { query.append(("stopSequence", String(stopSequence))) }
        return try await fetch(
            baseURL: baseURL, method: "arrival-and-departure-for-stop", id: stopID, apiKey: apiKey, query: query,
            as: ArrivalAndDeparture.self)
    }

    /// `arrivals-and-departures-for-stop`: every visit to a stop in a window.
    public func arrivalsAndDepartures(
        baseURL: String, apiKey: String?, stopID: String, minutesBefore: Int,
        minutesAfter: Int
    ) async throws(OBAError) -> OBAResponse<StopArrivals> {
        try await fetch(
            baseURL: baseURL, method: "arrivals-and-departures-for-stop", id: stopID, apiKey: apiKey,
            query: [("minutesBefore", String(minutesBefore)), ("minutesAfter", String(minutesAfter))],
            as: StopArrivals.self)
    }

    /// `trip-details`, kept as raw JSON (a snapshot for agency dashboards).
    public func tripDetails(baseURL: String, apiKey: String?, tripID: String, serviceDate: Int64?) async throws(OBAError) -> OBAResponse<JSONValue> {
        var query: [(String, String)] = [("includeStatus", "true"), ("includeSchedule", "true")]
        if let serviceDate { query.append(("serviceDate", String(serviceDate))) }
        return try await fetch(baseURL: baseURL, method: "trip-details", id: tripID, apiKey: apiKey, query: query, as: JSONValue.self)
    }

    /// Whether the server knows an entity: `route`, `stop` or `trip` by its
    /// OneBusAway id, waiting at most `timeoutSeconds`. Throws `.notFound`
    /// when it does not, `.transient` when it could not say.
    public func entity(baseURL: String, apiKey: String?, method: String, id: String, timeoutSeconds: Int) async throws(OBAError) {
        let url = Self.url(baseURL: baseURL, method: method, id: id, apiKey: apiKey, query: [])
        let response: HTTPClientResponse
        do { response = try await http.send(HTTPClientRequest(url: url, timeoutSeconds: timeoutSeconds, upstream: "oba")) } catch {
            throw .transient("\(error)")
        }
        _ = try Self.decode(status: response.status, body: response.body, as: JSONValue.self)
    }

    /// `agencies-with-coverage`: the agencies the server covers, with names.
    public func agenciesWithCoverage(baseURL: String, apiKey: String?) async throws(OBAError) -> [AgencyCoverage] {
        let (list, references) = try await fetchList(baseURL: baseURL, path: "agencies-with-coverage.json", apiKey: apiKey, as: CoverageItem.self)
        let names = Dictionary((references?.agencies ?? []).map { ($0.id, $0.name ?? $0.id) }, uniquingKeysWith: { first, _ in first })
        return list.compactMap { $0.agencyId }.map { AgencyCoverage(id: $0, name: names[$0] ?? $0) }
    }

    /// `vehicles-for-agency`: the ids of an agency's vehicles.
    public func vehicleIDs(baseURL: String, apiKey: String?, agencyID: String) async throws(OBAError) -> [String] {
        let (list, _) = try await fetchList(
            baseURL: baseURL, path: "vehicles-for-agency/\(Self.escape(agencyID)).json", apiKey: apiKey,
            as: VehicleStatus.self)
        return list.compactMap(\.vehicleId)
    }

    private func fetchList<Item: Decodable>(baseURL: String, path: String, apiKey: String?, as: Item.Type) async throws(OBAError) -> (
        [Item], AgencyReferences?
    ) {
        var url = (baseURL.hasSuffix("/") ? baseURL : baseURL + "/") + "api/where/" + path
        if let apiKey, !apiKey.isEmpty { url += "?key=" + Self.escape(apiKey) }
        let response: HTTPClientResponse
        do { response = try await http.get(url, upstream: "oba") } catch { throw .transient("\(error)") }
        if response.status == 404 { throw .notFound }
        guard (200..<300).contains(response.status) else { throw .transient("HTTP \(response.status)") }
        let envelope: ListEnvelope<Item>
        do { envelope = try JSONDecoder().decode(ListEnvelope<Item>.self, from: Data(response.body)) } catch {
            throw .transient("malformed response: \(error)")
        }
        if envelope.code == 404 { throw .notFound }
        guard envelope.code == 200 || envelope.code == nil else { throw .transient("OBA code \(envelope.code ?? 0): \(envelope.text ?? "")") }
        return (envelope.data?.list ?? [], envelope.data?.references)
    }

    /// The URL of one API method: `<base>/api/where/<method>/<id>.json?key=...`.
    public static func url(baseURL: String, method: String, id: String, apiKey: String?, query: [(String, String)]) -> String {
        var url = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        // Methods without an id (`current-time`) are `<method>.json`.
        url += id.isEmpty ? "api/where/\(method).json" : "api/where/\(method)/\(escape(id)).json"
        var pairs = query
        if let apiKey, !apiKey.isEmpty { pairs.insert(("key", apiKey), at: 0) }
        if !pairs.isEmpty { url += "?" + pairs.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&") }
        return url
    }

    static func escape(_ text: String) -> String { PercentEncoding.encode(text) }

    private func fetch<Entry: Decodable & Sendable>(
        baseURL: String, method: String, id: String, apiKey: String?,
        query: [(String, String)], as: Entry.Type
    ) async throws(OBAError) -> OBAResponse<Entry> {
        let response: HTTPClientResponse
        do {
            response = try await http.get(Self.url(baseURL: baseURL, method: method, id: id, apiKey: apiKey, query: query), upstream: "oba")
        } catch {
            throw .transient("\(error)")
        }
        return try Self.decode(status: response.status, body: response.body, as: Entry.self)
    }

    /// Classifies and decodes a response (public for tests on fixtures).
    public static func decode<Entry: Decodable & Sendable>(status: Int, body: [UInt8], as: Entry.Type) throws(OBAError) -> OBAResponse<Entry> {
        if status == 404 { throw .notFound }
        guard (200..<300).contains(status) else { throw .transient("HTTP \(status)") }
        let envelope: Envelope<Entry>
        do {
            envelope = try JSONDecoder().decode(Envelope<Entry>.self, from: Data(body))
        } catch {
            throw .transient("malformed response: \(error)")
        }
        if envelope.code == 404 { throw .notFound }
        guard envelope.code == 200 || envelope.code == nil else { throw .transient("OBA code \(envelope.code ?? 0): \(envelope.text ?? "")") }
        guard let entry = envelope.data?.entry else { throw .notFound }
        return OBAResponse(currentTime: EpochMillis(envelope.currentTime ?? 0), entry: entry, references: envelope.data?.references)
    }

    struct Envelope<Entry: Decodable>: Decodable {
        var code: Int?
        var currentTime: Int64?
        var text: String?
        var data: Payload?

        struct Payload: Decodable {
            var entry: Entry?
            var references: References?

            enum CodingKeys: String, CodingKey { case entry, references }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                // A JSON null entry, like a missing one, means "nothing found".
                entry = try container.decodeIfPresent(Entry.self, forKey: .entry)
                references = try? container.decodeIfPresent(References.self, forKey: .references)
            }
        }
    }
}
