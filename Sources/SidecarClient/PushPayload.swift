import Foundation

/// What a sidecar push asks the app to do, read from a notification's user
/// info (iOS) or data map (Android, where a value is a JSON string), by the
/// apps' rule: exactly one key besides `aps` decides.
public enum SidecarPush: Equatable, Sendable {
    case alarm(AlarmPushBody)
    /// A donation prompt, with the test id the server may attach.
    case donation(testID: String?)
    /// A service alert (no custom key): shown as it is.
    case alert(title: String?, body: String?)
    case unknown

    /// `arrival_and_departure`: where a fired alarm's bus is.
    public struct AlarmPushBody: Codable, Equatable, Sendable {
        public var regionID: Int
        public var stopID: String
        public var tripID: String
        /// Epoch milliseconds.
        public var serviceDate: Int64
        public var vehicleID: String?
        public var stopSequence: Int

        enum CodingKeys: String, CodingKey {
            case regionID = "region_id", stopID = "stop_id", tripID = "trip_id", serviceDate = "service_date", vehicleID = "vehicle_id"
            case stopSequence = "stop_sequence"
        }

        public init(regionID: Int, stopID: String, tripID: String, serviceDate: Int64, vehicleID: String?, stopSequence: Int) {
            self.regionID = regionID
            self.stopID = stopID
            self.tripID = tripID
            self.serviceDate = serviceDate
            self.vehicleID = vehicleID
            self.stopSequence = stopSequence
        }
    }

    /// Android: an FCM message's data map (every value a string) and its
    /// notification's title and body, which carry a service alert.
    public init(data: [String: String], notificationTitle: String? = nil, notificationBody: String? = nil) {
        if data.keys.allSatisfy({ $0 == "aps" }) {
            self = notificationTitle == nil && notificationBody == nil ? .unknown : .alert(title: notificationTitle, body: notificationBody)
        } else {
            self.init(userInfo: data)
        }
    }

    /// iOS: a notification's `userInfo` (`aps` plus at most one custom key).
    public init(userInfo: [AnyHashable: Any]) {
        let custom = userInfo.keys.compactMap { $0 as? String }.filter { $0 != "aps" }
        guard !custom.isEmpty else {
            let aps = userInfo["aps"] as? [String: Any]
            let alert = aps?["alert"]
            if let text = alert as? String {
                self = .alert(title: nil, body: text)
            } else if let fields = alert as? [String: Any] {
                self = .alert(title: fields["title"] as? String, body: fields["body"] as? String)
            } else {
                self = .unknown
            }
            return
        }
        guard custom.count == 1, let key = custom.first else {
            self = .unknown
            return
        }
        switch key {
        case "arrival_and_departure":
            // iOS: an object; Android (FCM data): the same object as a JSON string.
            var object = userInfo[key] as? [String: Any]
            if object == nil, let text = userInfo[key] as? String, let data = text.data(using: .utf8) {
                object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            }
            guard let object, let data = try? JSONSerialization.data(withJSONObject: object),
                let body = try? JSONDecoder().decode(AlarmPushBody.self, from: data)
            else {
                self = .unknown
                return
            }
            self = .alarm(body)
        case "donation":
            self = .donation(testID: userInfo[key] as? String)
        default:
            self = .unknown
        }
    }
}

/// The body of an alarm push (`arrival_and_departure`), by the name the apps use.
public typealias AlarmPushBody = SidecarPush.AlarmPushBody
