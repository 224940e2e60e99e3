import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Typed calls to every rider endpoint of a sidecar, with the apps' wire
/// habits: form bodies (JSON for the survey and donation endpoints), and
/// `key`, `app_uid`, `app_ver` and `version=2` on every query.
public struct SidecarAPI: Sendable {
    public let baseURL: URL
    public let regionID: Int
    public var apiKey: String?
    public var appUID: String?
    public var appVersion: String?
    let transport: any SidecarHTTPTransport

    /// Calls over URLSession (`.shared` unless given).
    public init(
        baseURL: URL, regionID: Int, apiKey: String? = nil, appUID: String? = nil, appVersion: String? = nil,
        session: URLSession = .shared
    ) {
        self.init(
            baseURL: baseURL, regionID: regionID, apiKey: apiKey, appUID: appUID, appVersion: appVersion,
            transport: URLSessionHTTPTransport(session: session))
    }

    /// Calls over another transport: a test's fake, or a tool's own HTTP client.
    public init(
        baseURL: URL, regionID: Int, apiKey: String? = nil, appUID: String? = nil, appVersion: String? = nil,
        transport: any SidecarHTTPTransport
    ) {
        self.baseURL = baseURL
        self.regionID = regionID
        self.apiKey = apiKey
        self.appUID = appUID
        self.appVersion = appVersion
        self.transport = transport
    }

    /// What went wrong, typed as the apps need to tell apart.
    public enum Failure: Error, Equatable, Sendable {
        /// 404 on a region's path: this sidecar does not serve the region.
        case unknownRegion
        /// 404 elsewhere: no such survey or survey response.
        case notFound(message: String?)
        /// 422: the server's validation messages (a bug in the caller: report it).
        case invalid(messages: [String])
        /// 422 `already_reported`: this ghost-bus report was filed before (benign).
        case alreadyReported
        /// 429: wait at least `retryAfter` seconds (your dedupe may be broken).
        case throttled(retryAfter: TimeInterval?)
        /// 403 from the weather endpoint: hide the weather UI.
        case weatherHidden
        /// 502–504: the sidecar's upstream (OneBusAway, a provider) failed.
        case upstream(status: Int)
        /// Any other status.
        case unexpected(status: Int)
        /// A success whose body is not what the contract says.
        case undecodable(String)
        /// No answer: connection refused, timeout, TLS…
        case transport(String)
    }

    /// Whose 404 and 403 an answer is.
    enum Endpoint { case region, weather, global }

    /// An answer: status, headers that matter, body.
    public struct Answer: Sendable {
        public var status: Int
        public var retryAfter: String?
        public var body: Data

        public init(status: Int, retryAfter: String? = nil, body: Data = Data()) {
            self.status = status
            self.retryAfter = retryAfter
            self.body = body
        }
    }

    func url(_ path: String, query: [(String, String)] = []) -> URL {
        let root = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        var items = query
        if let apiKey { items.append(("key", apiKey)) }
        if let appUID { items.append(("app_uid", appUID)) }
        if let appVersion { items.append(("app_ver", appVersion)) }
        items.append(("version", "2"))
        // Paths come from this library, or from the server (a survey's
        // `update_path`): encode what a path may not hold, never crash on it.
        let encodedPath = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? ""
        let query = items.map { "\($0.0)=\(SidecarLink.encoded($0.1))" }.joined(separator: "&")
        return URL(string: root + (encodedPath.hasPrefix("/") ? "" : "/") + encodedPath + "?" + query) ?? baseURL
    }

    func send(_ method: String, _ url: URL, form: [(String, String)] = [], json: Data? = nil) async throws(Failure) -> Answer {
        var request = SidecarHTTPRequest(method: method, url: url, headers: [("Accept", "application/json")])
        if let json {
            request.headers.append(("Content-Type", "application/json"))
            request.body = json
        } else if !form.isEmpty {
            request.headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            request.body = Data(form.map { "\($0.0)=\(SidecarLink.encoded($0.1))" }.joined(separator: "&").utf8)
        }
        return try await transport.send(request)
    }

    /// The typed failure an unsuccessful answer means.
    static func failure(_ answer: Answer, _ endpoint: Endpoint = .region) -> Failure {
        let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any]
        switch answer.status {
        case 404 where endpoint == .global: return .notFound(message: object?["error"] as? String)
        case 404: return .unknownRegion
        case 422 where object?["error"] as? String == "already_reported": return .alreadyReported
        case 422: return .invalid(messages: object?["messages"] as? [String] ?? object?["errors"] as? [String] ?? [])
        case 429: return .throttled(retryAfter: answer.retryAfter.flatMap(TimeInterval.init))
        case 403 where endpoint == .weather: return .weatherHidden
        case 502, 503, 504: return .upstream(status: answer.status)
        default: return .unexpected(status: answer.status)
        }
    }

    // MARK: Reads

    /// `GET` a rider path (with the standard query items); the raw answer.
    public func get(_ path: String, query: [(String, String)] = []) async throws(Failure) -> Answer {
        try await send("GET", url(path, query: query))
    }

    /// The alerts feed as protobuf bytes (`/api/v1/regions/{id}/alerts.pb`);
    /// `includeTest` adds alerts flagged as tests.
    public func alertsFeed(includeTest: Bool = false) async throws(Failure) -> Data {
        let answer = try await get("/api/v1/regions/\(regionID)/alerts.pb", query: includeTest ? [("test", "1")] : [])
        guard answer.status == 200 else { throw Self.failure(answer) }
        return answer.body
    }

    /// The region's published service alerts, decoded.
    public func alerts(includeTest: Bool = false) async throws(Failure) -> AlertsFeed {
        let bytes = try await alertsFeed(includeTest: includeTest)
        guard !bytes.isEmpty else { throw .undecodable("an empty body (a feed always has a header)") }
        do { return try AlertsFeed(decoding: bytes) } catch { throw .undecodable("not a GTFS-realtime feed: \(error)") }
    }

    /// The surveys active now for the rider's anonymous device id.
    public func surveys(userID: String) async throws(Failure) -> SurveyList {
        try Self.decoded(await get("/api/v1/regions/\(regionID)/surveys.json", query: [("user_id", userID)]))
    }

    /// Records a survey response (the app sends the first answer at once, so
    /// partial answers survive) and returns the path to amend it through.
    public func submitSurveyResponse(
        surveyID: Int, userIdentifier: String, stop: SurveyStop? = nil,
        answers: [SurveyAnswer]
    ) async throws(Failure) -> SurveyResponseReceipt {
        var body: [String: SidecarJSON] = [
            "survey_id": .number(Double(surveyID)), "user_identifier": .string(userIdentifier),
            "responses": .string(Self.encodedAnswers(answers)),
        ]
        if let stop {
            body["stop_identifier"] = .string(stop.stopID)
            body["stop_latitude"] = .number(stop.latitude)
            body["stop_longitude"] = .number(stop.longitude)
        }
        let answer = try await send("POST", url("/api/v1/survey_responses"), json: Self.json(body))
        return try Self.decoded(answer, as: SurveyResponseReceipt.Envelope.self, .global).receipt
    }

    /// Merges answers into a recorded response by question (POST to its
    /// `update_path`, as the shipped apps do).
    public func amendSurveyResponse(_ receipt: SurveyResponseReceipt, answers: [SurveyAnswer]) async throws(Failure) -> SurveyResponseReceipt {
        let answer = try await send("POST", url(receipt.updatePath), json: Self.json(["responses": .string(Self.encodedAnswers(answers))]))
        return try Self.decoded(answer, as: SurveyResponseReceipt.Envelope.self, .global).receipt
    }

    /// The region's forecast; `.weatherHidden` means hide the weather UI.
    public func weather() async throws(Failure) -> WeatherForecast {
        try Self.decoded(await get("/api/v1/regions/\(regionID)/weather.json"), .weather)
    }

    /// Vehicles whose id contains `query` (under 3 characters: none). The
    /// path has no `.json`, as the iOS app sends it.
    /// `.upstream` means the region's OneBusAway server did not answer,
    /// which is not the same as "no such vehicle".
    public func vehicles(matching query: String) async throws(Failure) -> [VehicleMatch] {
        try Self.decoded(await get("/api/v1/regions/\(regionID)/vehicles", query: [("query", query)]))
    }

    /// Files a ghost-bus report; its id. A repeat is `.alreadyReported` (benign).
    public func reportGhostBus(_ report: GhostBusReport) async throws(Failure) -> String {
        struct Created: Decodable { let id: String }
        return try Self.decoded(
            await send("POST", url("/api/v2/regions/\(regionID)/ghost_bus_reports"), form: report.form), as: Created.self,
            expecting: #"{"id": …}"#
        ).id
    }

    /// Starts a donation: the PaymentSheet's secrets. `recurring` makes it monthly.
    public func createPaymentIntent(
        amountInCents: Int, email: String, name: String? = nil, recurring: Bool = false,
        testMode: Bool = false
    ) async throws(Failure) -> PaymentIntent {
        var body: [String: SidecarJSON] = [
            "donation_amount_in_cents": .number(Double(amountInCents)), "email": .string(email),
            "donation_frequency": .string(recurring ? "recurring" : "one_time"), "test_mode": .string(testMode ? "1" : "0"),
        ]
        if let name { body["name"] = .string(name) }
        return try Self.decoded(await send("POST", url("/api/v1/payment_intents"), json: Self.json(body)), .global)
    }

    static func encodedAnswers(_ answers: [SurveyAnswer]) -> String {
        // The contract's `responses` is a JSON array encoded into a string.
        (try? JSONEncoder().encode(answers)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func json(_ body: [String: SidecarJSON]) -> Data { (try? JSONEncoder().encode(body)) ?? Data("{}".utf8) }

    /// A 2xx decoded as `T`, or the failure the answer means.
    /// `expecting` names the contract's shape in the failure (the type's name by default).
    static func decoded<T: Decodable>(
        _ answer: Answer, as type: T.Type = T.self, _ endpoint: Endpoint = .region,
        expecting: String? = nil
    ) throws(Failure) -> T {
        guard (200..<300).contains(answer.status) else { throw failure(answer, endpoint) }
        let shape = expecting ?? "a \(T.self)"
        guard !answer.body.isEmpty else { throw .undecodable("HTTP \(answer.status) with an empty body where the contract has \(shape)") }
        do { return try JSONDecoder().decode(T.self, from: answer.body) } catch {
            throw .undecodable("HTTP \(answer.status) with \(answer.body.count) bytes that are not \(shape) (\(Self.reason(error)))")
        }
    }

    /// A decoding error in a line: what was wrong, and where.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "" : " at \(keys.hasPrefix(".") ? String(keys.dropFirst()) : keys)"
        }
        switch error {
        case .keyNotFound(let key, let context): return "no \"\(key.stringValue)\"\(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(context.debugDescription.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: ".")))\(path(context))"
        case .dataCorrupted(let context): return "not JSON\(path(context))"
        @unknown default: return "\(error)"
        }
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
        var form = [
            ("token", registration.token), ("operating_system", registration.operatingSystem), ("locale", registration.locale),
            ("test_device", registration.testDevice ? "true" : "false"),
        ]
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

        public init(
            userPushID: String, stopID: String, tripID: String, serviceDate: Int64, vehicleID: String?, stopSequence: Int,
            secondsBefore: Int
        ) {
            self.userPushID = userPushID
            self.stopID = stopID
            self.tripID = tripID
            self.serviceDate = serviceDate
            self.vehicleID = vehicleID
            self.stopSequence = stopSequence
            self.secondsBefore = secondsBefore
        }
    }

    /// `POST /api/v2/regions/{id}/alarms` → the alarm's URL, its only handle for cancellation.
    public func createAlarm(_ alarm: AlarmRequest) async throws(Failure) -> URL {
        try await created(send("POST", url("/api/v2/regions/\(regionID)/alarms"), form: Self.form(alarm, sandbox: alarm.apnsSandbox)))
    }

    /// `POST /api/v1/regions/{id}/alarms`, for old builds whose `userPushID`
    /// is a OneSignal player id. Deprecated: new clients use `createAlarm`.
    /// Re-posting the same alarm returns the existing one's URL.
    public func createLegacyAlarm(_ alarm: AlarmRequest) async throws(Failure) -> URL {
        try await created(send("POST", url("/api/v1/regions/\(regionID)/alarms"), form: Self.form(alarm, sandbox: false)))
    }

    static func form(_ alarm: AlarmRequest, sandbox: Bool) -> [(String, String)] {
        var form = [
            ("user_push_id", alarm.userPushID), ("operating_system", alarm.operatingSystem), ("stop_id", alarm.stopID),
            ("trip_id", alarm.tripID), ("service_date", String(alarm.serviceDate)), ("stop_sequence", String(alarm.stopSequence)),
            ("seconds_before", String(alarm.secondsBefore)),
        ]
        if let vehicle = alarm.vehicleID { form.append(("vehicle_id", vehicle)) }
        if sandbox { form.append(("apns_sandbox", "1")) }
        return form
    }

    /// `POST …/live_activities` → the subscription's URL.
    public func registerLiveActivity(
        activityID: String, pushToken: String, stopID: String, routeShortName: String, tripHeadsign: String,
        tripID: String? = nil, serviceDate: Int64? = nil, vehicleID: String? = nil, stopSequence: Int? = nil,
        apnsSandbox: Bool = false
    ) async throws(Failure) -> URL {
        var form = [
            ("activity_id", activityID), ("push_token", pushToken), ("stop_id", stopID), ("route_short_name", routeShortName),
            ("trip_headsign", tripHeadsign),
        ]
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
        struct Created: Decodable { let url: String }
        let text = try Self.decoded(answer, as: Created.self, expecting: #"{"url": …}"#).url
        guard let url = URL(string: text), url.scheme != nil else { throw .undecodable("\"\(text)\" is not a URL") }
        return url
    }
}
