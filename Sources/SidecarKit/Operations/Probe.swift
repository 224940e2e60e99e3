import Core
import Crypto
import Foundation
import FoundationEssentials
import HTTPClient
import SidecarClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `sidecar probe URL --region N`: behaves like an app against any sidecar
/// (ours, another implementation, a production host) and reports pass or
/// fail per endpoint. Everything it creates it deletes again.
enum Probe {
    struct Options: Sendable {
        var baseURL: URL
        var regionID: Int
        /// A real departure for the alarm check (skipped without one).
        var stopID: String?
        var tripID: String?
        var serviceDate: EpochMillis?
        var stopSequence: Int?
        var vehicleID: String?
        /// Seconds each request may take before it counts as no answer.
        var timeout: TimeInterval = 15

        init(baseURL: URL, regionID: Int) {
            self.baseURL = baseURL
            self.regionID = regionID
        }
    }

    enum Verdict: String { case pass = "PASS", fail = "FAIL", warn = "WARN", skip = "skip" }

    static func run(_ options: Options, output: @Sendable (String) -> Void = { print($0) }) async -> Int32 {
        // A hanging server fails each check after the timeout instead of holding the probe for minutes.
        var configuration = HTTPClient.Configuration()
        configuration.timeoutSeconds = max(Int(options.timeout.rounded(.up)), 1)
        configuration.connectTimeoutSeconds = min(configuration.timeoutSeconds, 5)
        configuration.userAgent = "sidecar-probe/\(CommandLineInterface.version)"
        let client = HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        // The query items every app request carries (`key`, `app_uid`, `app_ver`, `version=2`).
        let api = SidecarAPI(
            baseURL: options.baseURL, regionID: options.regionID, apiKey: "sidecar-probe", appUID: "sidecar-probe",
            appVersion: "probe-\(CommandLineInterface.version)", transport: CurlHTTPTransport(client: client))
        var failures = 0
        var warnings: [String] = []
        func report(_ verdict: Verdict, _ name: String, _ detail: String) {
            if verdict == .fail { failures += 1 }
            if verdict == .warn { warnings.append(name) }
            output("  \(verdict.rawValue.padding(to: 5)) \(name.padding(to: 20)) \(detail)")
        }
        output("sidecar probe \(options.baseURL.absoluteString) region \(options.regionID)")
        let token = Hex.encode(SecureRandom.bytes(32))

        // Registration: POST then DELETE, never left behind.
        let registration = RegistrationPolicy.Registration(
            regionID: options.regionID, sidecarURL: options.baseURL, token: token, operatingSystem: "ios",
            locale: "en-US", testDevice: false, description: nil, sessionEpoch: 0)
        do {
            try await api.register(registration)
            do {
                try await api.unregister(token: token)
                report(.pass, "push registration", "registered (204) and deleted")
            } catch { report(.fail, "push registration", "registered, but the DELETE failed: \(describe(error))") }
        } catch {
            if case .unexpected(let status) = error, (200..<300).contains(status) {
                report(.fail, "push registration", "POST answered HTTP \(status) where the contract says 204 No Content")
            } else {
                report(.fail, "push registration", "POST failed: \(describe(error))")
            }
            try? await api.unregister(token: token)
        }

        // Live Activity: register, then delete by its URL. (URLs are never
        // printed: each is the only key to its resource.)
        do {
            let url = try await api.registerLiveActivity(
                activityID: "probe-\(token.prefix(12))", pushToken: token, stopID: options.stopID ?? "probe_stop",
                routeShortName: "probe", tripHeadsign: "sidecar probe")
            do {
                try await api.delete(url)
                report(.pass, "live activity", "registered and deleted by its URL")
            } catch { report(.fail, "live activity", "registered, but the DELETE failed: \(describe(error))") }
        } catch { report(.fail, "live activity", "registration failed: \(describe(error))") }

        // Alarm: only with a real departure to watch.
        if let stop = options.stopID, let trip = options.tripID, let serviceDate = options.serviceDate {
            do {
                let url = try await api.createAlarm(
                    .init(
                        userPushID: token, stopID: stop, tripID: trip, serviceDate: serviceDate.value, vehicleID: options.vehicleID,
                        stopSequence: options.stopSequence ?? 0, secondsBefore: 60))
                do {
                    try await api.delete(url)
                    report(.pass, "alarm", "created and deleted by its URL")
                } catch { report(.fail, "alarm", "created, but the DELETE failed: \(describe(error))") }
            } catch { report(.fail, "alarm", "creation failed: \(describe(error))") }
            try? await api.unregister(token: token)  // v2 alarms register the token too
        } else {
            report(.skip, "alarm", "give --stop-id, --trip-id and --service-date of a departure to create a real one")
        }

        // The alerts feed decodes as GTFS-realtime.
        do {
            let feed = try await api.alerts()
            report(.pass, "alerts feed", "GTFS-realtime \(feed.version), \(feed.alerts.count) alert\(feed.alerts.count == 1 ? "" : "s")")
        } catch { report(.fail, "alerts feed", describe(error)) }

        // Surveys, weather and vehicles decode into the library's models.
        do {
            let list = try await api.surveys(userID: "sidecar-probe")
            let questions = list.surveys.reduce(0) { $0 + $1.questions.count }
            report(.pass, "surveys", "\(list.surveys.count) active in \(list.region.name) (\(questions) question\(questions == 1 ? "" : "s"))")
        } catch { report(.fail, "surveys", describe(error)) }
        do {
            let forecast = try await api.weather()
            report(.pass, "weather", "a forecast: \(forecast.currentForecast?.summary ?? forecast.todaySummary ?? "no summary")")
        } catch .weatherHidden {
            report(.pass, "weather", "hidden (403: no weather key), as the apps expect")
        } catch { report(.fail, "weather", describe(error)) }
        do {
            let matches = try await api.vehicles(matching: "100")
            report(.pass, "vehicles", "\(matches.count) match\(matches.count == 1 ? "" : "es") for \"100\"")
        } catch .upstream(let status) {
            // The sidecar answered as it should, but riders get no vehicles,
            // alarms or Live Activity updates until OneBusAway answers.
            report(
                .warn, "vehicles",
                "\(status): the region's OneBusAway server did not answer; the sidecar said so properly, "
                    + "but alarms, Live Activities and vehicle search need it")
        } catch { report(.fail, "vehicles", describe(error)) }

        if failures > 0 {
            output("\(failures) check\(failures == 1 ? "" : "s") failed")
        } else if !warnings.isEmpty {
            output(
                "no check failed, but \(warnings.count) warned (\(warnings.joined(separator: ", "))): "
                    + "the region's OneBusAway server is down or unreachable from the sidecar")
        } else {
            output("every check passed")
        }
        return failures == 0 ? 0 : 1
    }

    /// The probe's transport: the server's own libcurl client. (The library's
    /// default, URLSession, keeps a core busy on Linux while it waits for a
    /// slow server, and a probe meets slow servers.)
    struct CurlHTTPTransport: SidecarHTTPTransport {
        let client: HTTPClient

        func send(_ request: SidecarHTTPRequest) async throws(SidecarAPI.Failure) -> SidecarAPI.Answer {
            do {
                let response = try await client.send(
                    HTTPClientRequest(
                        method: request.method, url: request.url.absoluteString, headers: request.headers,
                        body: Array(request.body ?? Data()), upstream: "probe"))
                return SidecarAPI.Answer(status: response.status, retryAfter: response.header("retry-after"), body: Data(response.body))
            } catch let error as HTTPClientError {
                throw .transport(Self.describe(error))
            } catch {
                throw .transport("\(error)")
            }
        }

        /// libcurl's failures in the words the URLSession transport uses.
        static func describe(_ error: HTTPClientError) -> String {
            guard case .transport(let code, let message) = error else { return error.description }
            switch code {
            case _ where error.isTimeout: return "timed out"
            case 6: return "host not found"
            case 7: return "connection refused"
            case 52, 56: return "the connection closed before an answer"
            case 35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91: return "TLS failed: \(message)"
            default: return message
            }
        }
    }

    /// One line for a failure, naming the status or what did not decode.
    static func describe(_ error: SidecarAPI.Failure) -> String {
        switch error {
        case .undecodable(let reason): return reason
        case .unknownRegion: return "404: this sidecar does not serve the region"
        case .notFound(let message): return "404: \(message ?? "not found")"
        case .invalid(let messages): return "422: \(messages.joined(separator: "; "))"
        case .alreadyReported: return "422: already reported"
        case .throttled(let after): return "429: throttled\(after.map { ", retry after \(Int($0)) s" } ?? "")"
        case .weatherHidden: return "403"
        case .upstream(let status), .unexpected(let status): return "HTTP \(status)"
        case .transport(let reason): return "no answer: \(reason)"
        }
    }
}
