import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Typed calls to a sidecar's rider API with the apps' wire habits: form
/// bodies, and `key`, `app_uid`, `app_ver` and `version=2` on every query.
/// (First part: push registrations, alarms and Live Activities.)
public struct SidecarAPI: Sendable {
    public let baseURL: URL
    public let regionID: Int
    public var apiKey: String?
    public var appUID: String?
    public var appVersion: String?
    let session: URLSession

    public init(baseURL: URL, regionID: Int, apiKey: String? = nil, appUID: String? = nil, appVersion: String? = nil,
                session: URLSession = .shared) {
        self.baseURL = baseURL
        self.regionID = regionID
        self.apiKey = apiKey
        self.appUID = appUID
        self.appVersion = appVersion
        self.session = session
    }

    /// What went wrong, typed as the apps need to tell apart.
    public enum Failure: Error, Equatable, Sendable {
        case unknownRegion
        case invalid(messages: [String])
        case throttled(retryAfter: TimeInterval?)
        case weatherHidden
        case upstream(status: Int)
        case unexpected(status: Int)
        case transport(String)
    }

    /// An answer: status, headers that matter, body.
    public struct Answer: Sendable {
        public var status: Int
        public var retryAfter: String?
        public var body: Data
    }

    func url(_ path: String, query: [(String, String)] = []) -> URL {
        let root = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        var items = query
        if let apiKey { items.append(("key", apiKey)) }
        if let appUID { items.append(("app_uid", appUID)) }
        if let appVersion { items.append(("app_ver", appVersion)) }
        items.append(("version", "2"))
        return URL(string: root + path + "?" + items.map { "\($0.0)=\(SidecarLink.encoded($0.1))" }.joined(separator: "&"))!
    }

    func send(_ method: String, _ url: URL, form: [(String, String)] = []) async throws(Failure) -> Answer {
        var request = URLRequest(url: url)
        request.httpMethod = method
        if !form.isEmpty {
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(form.map { "\($0.0)=\(SidecarLink.encoded($0.1))" }.joined(separator: "&").utf8)
        }
        do {
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else { throw Failure.transport("not HTTP") }
            return Answer(status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"), body: data)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .transport("\(error)")
        }
    }

    /// The typed failure an unsuccessful answer means.
    static func failure(_ answer: Answer) -> Failure {
        switch answer.status {
        case 404: return .unknownRegion
        case 422:
            let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any]
            return .invalid(messages: object?["messages"] as? [String] ?? object?["errors"] as? [String] ?? [])
        case 429: return .throttled(retryAfter: answer.retryAfter.flatMap(TimeInterval.init))
        case 403: return .weatherHidden
        case 502, 503, 504: return .upstream(status: answer.status)
        default: return .unexpected(status: answer.status)
        }
    }

    // MARK: Reads

    /// `GET` a rider path (with the standard query items); the raw answer.
    public func get(_ path: String, query: [(String, String)] = []) async throws(Failure) -> Answer {
        try await send("GET", url(path, query: query))
    }

    /// The alerts feed as protobuf bytes (`/api/v1/regions/{id}/alerts.pb`).
    public func alertsFeed() async throws(Failure) -> Data {
        let answer = try await get("/api/v1/regions/\(regionID)/alerts.pb")
        guard answer.status == 200 else { throw Self.failure(answer) }
        return answer.body
    }

    // MARK: Push registrations

    /// `POST /api/v2/regions/{id}/push_registrations` (204 on success).
    public func register(_ registration: RegistrationPolicy.Registration) async throws(Failure) {
        let answer = try await send("POST", url("/api/v2/regions/\(regionID)/push_registrations"), form: Self.form(registration))
        // The contract's answer is 204: anything else (a 200 included) is not a registration.
        guard answer.status == 204 else { throw answer.status == 200 ? .unexpected(status: 200) : Self.failure(answer) }
    }

    /// `DELETE …/push_registrations?token=` (a 404 means already gone: success).
    public func unregister(token: String) async throws(Failure) {
        let answer = try await send("DELETE", url("/api/v2/regions/\(regionID)/push_registrations", query: [("token", token)]))
        guard (200..<300).contains(answer.status) || answer.status == 404 else { throw Self.failure(answer) }
    }

    static func form(_ registration: RegistrationPolicy.Registration) -> [(String, String)] {
        var form = [("token", registration.token), ("operating_system", registration.operatingSystem), ("locale", registration.locale),
                    ("test_device", registration.testDevice ? "true" : "false")]
        if let description = registration.description { form.append(("description", description)) }
        return form
    }

    // MARK: Alarms and Live Activities

    /// An alarm request (v2), as the apps send it.
    public struct AlarmRequest: Sendable {
        public var userPushID: String
        public var operatingSystem = "ios"
        public var stopID: String
        public var tripID: String
        public var serviceDate: Int64
        public var vehicleID: String?
        public var stopSequence: Int
        public var secondsBefore: Int
        public var apnsSandbox = false

        public init(userPushID: String, stopID: String, tripID: String, serviceDate: Int64, vehicleID: String?, stopSequence: Int,
                    secondsBefore: Int) {
            self.userPushID = userPushID
            self.stopID = stopID
            self.tripID = tripID
            self.serviceDate = serviceDate
            self.vehicleID = vehicleID
            self.stopSequence = stopSequence
            self.secondsBefore = secondsBefore
        }
    }

    /// `POST …/alarms` → the alarm's URL, its only handle for cancellation.
    public func createAlarm(_ alarm: AlarmRequest) async throws(Failure) -> URL {
        var form = [("user_push_id", alarm.userPushID), ("operating_system", alarm.operatingSystem), ("stop_id", alarm.stopID),
                    ("trip_id", alarm.tripID), ("service_date", String(alarm.serviceDate)), ("stop_sequence", String(alarm.stopSequence)),
                    ("seconds_before", String(alarm.secondsBefore))]
        if let vehicle = alarm.vehicleID { form.append(("vehicle_id", vehicle)) }
        if alarm.apnsSandbox { form.append(("apns_sandbox", "1")) }
        return try await created(send("POST", url("/api/v2/regions/\(regionID)/alarms"), form: form))
    }

    /// `POST …/live_activities` → the subscription's URL.
    public func registerLiveActivity(activityID: String, pushToken: String, stopID: String, routeShortName: String, tripHeadsign: String,
                                     tripID: String? = nil, serviceDate: Int64? = nil, vehicleID: String? = nil, stopSequence: Int? = nil,
                                     apnsSandbox: Bool = false) async throws(Failure) -> URL {
        var form = [("activity_id", activityID), ("push_token", pushToken), ("stop_id", stopID), ("route_short_name", routeShortName),
                    ("trip_headsign", tripHeadsign)]
        if let tripID { form.append(("trip_id", tripID)) }
        if let serviceDate { form.append(("service_date", String(serviceDate))) }
        if let vehicleID { form.append(("vehicle_id", vehicleID)) }
        if let stopSequence { form.append(("stop_sequence", String(stopSequence))) }
        if apnsSandbox { form.append(("apns_sandbox", "1")) }
        return try await created(send("POST", url("/api/v2/regions/\(regionID)/live_activities"), form: form))
    }

    /// DELETE an alarm or Live Activity by its URL (404: already gone).
    public func delete(_ resource: URL) async throws(Failure) {
        let answer = try await send("DELETE", resource)
        guard (200..<300).contains(answer.status) || answer.status == 404 else { throw Self.failure(answer) }
    }

    func created(_ answer: Answer) throws(Failure) -> URL {
        guard (200..<300).contains(answer.status) else { throw Self.failure(answer) }
        guard let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any], let text = object["url"] as? String,
              let url = URL(string: text) else { throw .unexpected(status: answer.status) }
        return url
    }
}

/// The queue's transport on top of the API.
public struct SidecarRegistrationTransport: RegistrationTransport {
    let make: @Sendable (RegistrationPolicy.Registration) -> SidecarAPI

    /// `make` builds the API for a registration's sidecar and region.
    public init(make: @escaping @Sendable (RegistrationPolicy.Registration) -> SidecarAPI = { SidecarAPI(baseURL: $0.sidecarURL, regionID: $0.regionID) }) {
        self.make = make
    }

    public func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        await answer { () async throws(SidecarAPI.Failure) in try await make(registration).register(registration) }
    }

    public func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        await answer { () async throws(SidecarAPI.Failure) in try await make(registration).unregister(token: registration.token) }
    }

    func answer(_ call: () async throws(SidecarAPI.Failure) -> Void) async -> (status: Int?, retryAfter: String?) {
        do {
            try await call()
            return (204, nil)
        } catch {
            switch error {
            case .transport: return (nil, nil)
            case .unknownRegion: return (404, nil)
            case .invalid: return (422, nil)
            case .throttled(let after): return (429, after.map { String(Int($0)) })
            case .weatherHidden: return (403, nil)
            case .upstream(let status), .unexpected(let status): return (status, nil)
            }
        }
    }
}
