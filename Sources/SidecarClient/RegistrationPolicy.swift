import Foundation

/// The registration rules of `../shared/seeds/obacloud-push-notifications.txt`
/// §3–§5 and `push-registration-queue-design.txt`, as pure functions: what
/// the server should hold, whether to send it now, what an answer means and
/// how long to wait before trying again.
public enum RegistrationPolicy {
    /// Everything the decision reads; all observable, none of it intent.
    public struct Inputs: Equatable, Sendable {
        public enum Authorization: Equatable, Sendable { case notDetermined, denied, authorized, provisional, ephemeral }

        public var authorization: Authorization
        /// Lower-case hex for APNs, as issued for FCM.
        public var deviceToken: String?
        public var operatingSystem: String
        /// The rider's current region and its sidecar (nil: the region has none).
        public var regionID: Int?
        public var sidecarURL: URL?
        /// The region the app's sidecar client was built for; a different
        /// value means it still points at a region the rider left.
        public var clientRegionID: Int?
        /// The unnormalised BCP-47 locale.
        public var locale: String
        public var wantsTestDevice: Bool
        public var testDeviceName: String?
        /// Bumped on logout or account switch: a new session is a new state.
        public var sessionEpoch: Int

        public init(
            authorization: Authorization, deviceToken: String?, operatingSystem: String = "ios", regionID: Int?, sidecarURL: URL?,
            clientRegionID: Int?, locale: String, wantsTestDevice: Bool = false, testDeviceName: String? = nil, sessionEpoch: Int = 0
        ) {
            self.authorization = authorization
            self.deviceToken = deviceToken
            self.operatingSystem = operatingSystem
            self.regionID = regionID
            self.sidecarURL = sidecarURL
            self.clientRegionID = clientRegionID
            self.locale = locale
            self.wantsTestDevice = wantsTestDevice
            self.testDeviceName = testDeviceName
            self.sessionEpoch = sessionEpoch
        }
    }

    /// What the server should hold for this device.
    public struct Registration: Codable, Equatable, Hashable, Sendable {
        public var regionID: Int
        public var sidecarURL: URL
        public var token: String
        public var operatingSystem: String
        public var locale: String
        public var testDevice: Bool
        public var description: String?
        public var sessionEpoch: Int

        public init(
            regionID: Int, sidecarURL: URL, token: String, operatingSystem: String, locale: String, testDevice: Bool, description: String?,
            sessionEpoch: Int
        ) {
            self.regionID = regionID
            self.sidecarURL = sidecarURL
            self.token = token
            self.operatingSystem = operatingSystem
            self.locale = locale
            self.testDevice = testDevice
            self.description = description
            self.sessionEpoch = sessionEpoch
        }
    }

    public enum Desired: Equatable, Sendable {
        /// Not enough is known yet (no decision on permission, no token, a stale client).
        case unresolved
        /// The rider refused notifications: nothing to register.
        case optedOut
        /// The current region has no sidecar: push is unavailable there.
        case noSidecar
        case wanted(Registration)
    }

    public static func desired(_ inputs: Inputs) -> Desired {
        switch inputs.authorization {
        case .notDetermined: return .unresolved
        case .denied: return .optedOut
        case .authorized, .provisional, .ephemeral: break  // provisional riders get quiet notifications: they count
        }
        guard let token = inputs.deviceToken, !token.isEmpty, let regionID = inputs.regionID else { return .unresolved }
        guard let sidecarURL = inputs.sidecarURL else { return .noSidecar }
        // Stale-region guard: never register through a client built for another region.
        guard inputs.clientRegionID == regionID else { return .unresolved }
        // A test device needs a name (the server refuses one without); without it, a regular device.
        let name = inputs.testDeviceName?.trimmingCharacters(in: .whitespacesAndNewlines)
        let testDevice = inputs.wantsTestDevice && !(name ?? "").isEmpty
        return .wanted(
            Registration(
                regionID: regionID, sidecarURL: sidecarURL, token: token, operatingSystem: inputs.operatingSystem,
                locale: inputs.locale, testDevice: testDevice, description: testDevice ? name : nil,
                sessionEpoch: inputs.sessionEpoch))
    }

    /// How long a success stays fresh: re-sent after this even unchanged,
    /// which keeps the token past the server's 180-day prune.
    public static let refreshInterval: TimeInterval = 24 * 3600

    /// Whether to POST: the wanted registration differs from the last
    /// success, or that success is a day old (or there is none).
    public static func shouldSend(_ wanted: Registration, lastSuccess: Registration?, at lastSuccessDate: Date?, now: Date) -> Bool {
        guard let lastSuccess, let lastSuccessDate, lastSuccess == wanted else { return true }
        return now.timeIntervalSince(lastSuccessDate) >= refreshInterval || now < lastSuccessDate
    }

    /// The registration to delete best-effort when the token or region changed.
    public static func toDelete(previous: Registration?, wanted: Registration) -> Registration? {
        guard let previous, previous.token != wanted.token || previous.regionID != wanted.regionID || previous.sidecarURL != wanted.sidecarURL else {
            return nil
        }
        return previous
    }

    public enum Outcome: Equatable, Sendable {
        case success
        /// Not retried until an input changes (422, an unknown region).
        case permanent(status: Int)
        /// Worth retrying later (429, 5xx, no answer), after `retryAfter` when given.
        case retryable(retryAfter: TimeInterval?)
    }

    /// What a POST (or, with `isDelete`, a DELETE) answer means.
    public static func outcome(status: Int?, retryAfter: String? = nil, isDelete: Bool = false) -> Outcome {
        guard let status else { return .retryable(retryAfter: nil) }
        switch status {
        case 200..<300: return .success
        case 404 where isDelete: return .success  // already gone
        case 429, 500..<600, 408: return .retryable(retryAfter: retryAfter.flatMap(TimeInterval.init).map { max($0, 0) })
        default: return .permanent(status: status)
        }
    }

    /// Exponential backoff with jitter, bounded, never sooner than the server asked:
    /// 2 s, 4 s, 8 s … up to 15 minutes, each scaled by `jitter` (0…1) into its upper half.
    public static func retryDelay(attempt: Int, retryAfter: TimeInterval?, jitter: Double) -> TimeInterval {
        let base = min(2 * pow(2, Double(max(attempt, 0))), 900)
        let jittered = base * (0.5 + 0.5 * min(max(jitter, 0), 1))
        return max(jittered, retryAfter ?? 0)
    }
}

/// Printable without the token: apps log statuses, and a push token never
/// belongs in a log (its first four characters tell registrations apart).
/// (`description` is the test device's name, so the printable form is the
/// debug description, which `print` and string interpolation fall back to.)
extension RegistrationPolicy.Registration: CustomDebugStringConvertible {
    public var debugDescription: String {
        "Registration(region \(regionID) at \(sidecarURL.absoluteString), token \(token.prefix(4))…, \(operatingSystem), \(locale)"
            + (testDevice ? ", test device" : "") + ", session \(sessionEpoch))"
    }
}
