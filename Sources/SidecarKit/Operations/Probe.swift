import Core
import Crypto
import FoundationEssentials
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GTFSRealtime
import SidecarClient

/// `sidecar probe URL --region N`: behaves like an app against any sidecar
/// (ours, another implementation, a production host) and reports pass or
/// fail per endpoint. Everything it creates it deletes again.
public enum Probe {
    public struct Options: Sendable {
        public var baseURL: URL
        public var regionID: Int
        /// A real departure for the alarm check (skipped without one).
        public var stopID: String?
        public var tripID: String?
        public var serviceDate: Int64?
        public var stopSequence: Int?
        public var vehicleID: String?

        public init(baseURL: URL, regionID: Int) {
            self.baseURL = baseURL
            self.regionID = regionID
        }
    }

    enum Verdict: String { case pass = "PASS", fail = "FAIL", skip = "skip" }

    public static func run(_ options: Options, output: @Sendable (String) -> Void = { print($0) }) async -> Int32 {
        let api = SidecarAPI(baseURL: options.baseURL, regionID: options.regionID, appUID: "sidecar-probe", appVersion: "probe-\(CommandLineInterface.version)")
        var failures = 0
        func report(_ verdict: Verdict, _ name: String, _ detail: String) {
            if verdict == .fail { failures += 1 }
            output("  \(verdict.rawValue.padding(to: 5)) \(name.padding(to: 20)) \(detail)")
        }
        output("sidecar probe \(options.baseURL.absoluteString) region \(options.regionID)")
        let token = Hex.encode(SecureRandom.bytes(32))

        // Registration: POST then DELETE, never left behind.
        let registration = RegistrationPolicy.Registration(regionID: options.regionID, sidecarURL: options.baseURL, token: token, operatingSystem: "ios",
                                                           locale: "en-US", testDevice: false, description: nil, sessionEpoch: 0)
        do {
            try await api.register(registration)
            do {
                try await api.unregister(token: token)
                report(.pass, "push registration", "registered (204) and deleted")
            } catch { report(.fail, "push registration", "registered, but the DELETE failed: \(error)") }
        } catch {
            report(.fail, "push registration", "POST failed: \(error)")
            try? await api.unregister(token: token)
        }

        // Live Activity: register, then delete by its URL.
        do {
            let url = try await api.registerLiveActivity(activityID: "probe-\(token.prefix(12))", pushToken: token, stopID: options.stopID ?? "probe_stop",
                                                         routeShortName: "probe", tripHeadsign: "sidecar probe")
            do {
                try await api.delete(url)
                report(.pass, "live activity", "registered (\(url.path)) and deleted")
            } catch { report(.fail, "live activity", "registered, but the DELETE failed: \(error)") }
        } catch { report(.fail, "live activity", "registration failed: \(error)") }

        // Alarm: only with a real departure to watch.
        if let stop = options.stopID, let trip = options.tripID, let serviceDate = options.serviceDate {
            do {
                let url = try await api.createAlarm(.init(userPushID: token, stopID: stop, tripID: trip, serviceDate: serviceDate, vehicleID: options.vehicleID,
                                                          stopSequence: options.stopSequence ?? 0, secondsBefore: 60))
                do {
                    try await api.delete(url)
                    report(.pass, "alarm", "created (\(url.path)) and deleted")
                } catch { report(.fail, "alarm", "created, but the DELETE failed: \(error)") }
            } catch { report(.fail, "alarm", "creation failed: \(error)") }
            try? await api.unregister(token: token)  // v2 alarms register the token too
        } else {
            report(.skip, "alarm", "give --stop-id, --trip-id and --service-date of a departure to create a real one")
        }

        // The alerts feed decodes as GTFS-realtime.
        do {
            let bytes = Array(try await api.alertsFeed())
            guard !bytes.isEmpty else { throw ProbeFailure("an empty body (a feed always has a header)") }
            let feed = try FeedMessage(decoding: bytes)
            report(.pass, "alerts feed", "GTFS-realtime \(feed.header.gtfsRealtimeVersion), \(feed.entities.count) alert\(feed.entities.count == 1 ? "" : "s")")
        } catch { report(.fail, "alerts feed", "not a GTFS-realtime feed: \(error)") }

        // Surveys, weather and vehicles answer in their shapes.
        await json("surveys", api, "/api/v1/regions/\(options.regionID)/surveys.json", [("user_id", "sidecar-probe")], report: report)
        do {
            let answer = try await api.get("/api/v1/regions/\(options.regionID)/weather.json")
            switch answer.status {
            case 200 where (try? JSONSerialization.jsonObject(with: answer.body)) is [String: Any]: report(.pass, "weather", "a forecast")
            case 403: report(.pass, "weather", "hidden (403: no weather key), as the apps expect")
            default: report(.fail, "weather", "HTTP \(answer.status) with \(answer.body.count) bytes")
            }
        } catch { report(.fail, "weather", "\(error)") }
        do {
            let answer = try await api.get("/api/v1/regions/\(options.regionID)/vehicles", query: [("query", "1")])
            switch answer.status {
            case 200 where (try? JSONSerialization.jsonObject(with: answer.body)) != nil: report(.pass, "vehicles", "a search answer")
            case 502: report(.pass, "vehicles", "502: the region's OneBusAway server did not answer (the sidecar said so properly)")
            default: report(.fail, "vehicles", "HTTP \(answer.status) with \(answer.body.count) bytes")
            }
        } catch { report(.fail, "vehicles", "\(error)") }

        output(failures == 0 ? "every check passed" : "\(failures) check\(failures == 1 ? "" : "s") failed")
        return failures == 0 ? 0 : 1
    }

    struct ProbeFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func json(_ name: String, _ api: SidecarAPI, _ path: String, _ query: [(String, String)],
                     report: (Verdict, String, String) -> Void) async {
        do {
            let answer = try await api.get(path, query: query)
            guard answer.status == 200, (try? JSONSerialization.jsonObject(with: answer.body)) != nil else {
                report(.fail, name, "HTTP \(answer.status) with \(answer.body.count) bytes (expected 200 and JSON)")
                return
            }
            report(.pass, name, "200 with JSON")
        } catch { report(.fail, name, "\(error)") }
    }
}
