import Core
import FoundationEssentials

/// The transit system of `sidecar serve --demo`: three bus routes running
/// all day, computed from the clock alone (no state, no randomness), with
/// predictions that drift the way real ones do: each trip runs late or early
/// by its own amount, and that amount wanders by a minute or so over a
/// quarter of an hour.
enum DemoTransit {
    static let agencyID = "demo"
    static let agencyName = "Demo Transit (simulated)"
    /// Seattle's zone: the console shows the demo's times as its staff would
    /// (service runs around the clock, so service days start at midnight UTC).
    static let timezone = "America/Los_Angeles"

    struct Stop: Sendable, Equatable {
        let id: String
        let name: String
        let latitude: Double
        let longitude: Double
    }

    struct Route: Sendable {
        let id: String
        let shortName: String
        let longName: String
        let color: String
        /// Minutes between departures from either end.
        let headwayMinutes: Int
        /// Minutes from one stop to the next.
        let minutesBetweenStops: Int
        /// Stops in outbound order (direction 0); inbound runs them backwards.
        let stops: [Stop]
        /// Fleet vehicles cycled through the day's trips in each direction.
        let fleetSize: Int

        func stops(direction: Int) -> [Stop] { direction == 0 ? stops : stops.reversed() }
        func headsign(direction: Int) -> String { stops(direction: direction).last!.name }
        var tripMinutes: Int { (stops.count - 1) * minutesBetweenStops }
    }

    // Around downtown Seattle, where OneBusAway began.
    static let routes: [Route] = [
        Route(
            id: "demo_1", shortName: "1", longName: "Harbor – University", color: "1F6FEB", headwayMinutes: 10, minutesBetweenStops: 3,
            stops: [
                Stop(id: "demo_1001", name: "Harbor Terminal", latitude: 47.6025, longitude: -122.3390),
                Stop(id: "demo_1002", name: "1st Ave & Pike St", latitude: 47.6088, longitude: -122.3404),
                Stop(id: "demo_1003", name: "Central Library", latitude: 47.6067, longitude: -122.3325),
                Stop(id: "demo_1004", name: "Convention Center", latitude: 47.6117, longitude: -122.3317),
                Stop(id: "demo_1005", name: "Capitol Hill Station", latitude: 47.6191, longitude: -122.3204),
                Stop(id: "demo_1006", name: "University Station", latitude: 47.6498, longitude: -122.3038),
            ], fleetSize: 6),
        Route(
            id: "demo_2", shortName: "2X", longName: "Airport Express", color: "D1242F", headwayMinutes: 15, minutesBetweenStops: 5,
            stops: [
                Stop(id: "demo_1003", name: "Central Library", latitude: 47.6067, longitude: -122.3325),
                Stop(id: "demo_2002", name: "Stadium", latitude: 47.5914, longitude: -122.3325),
                Stop(id: "demo_2003", name: "Rainier Beach", latitude: 47.5223, longitude: -122.2792),
                Stop(id: "demo_2004", name: "Airport Terminal", latitude: 47.4445, longitude: -122.2966),
            ], fleetSize: 4),
        Route(
            id: "demo_3", shortName: "3", longName: "Crosstown", color: "1A7F37", headwayMinutes: 12, minutesBetweenStops: 4,
            stops: [
                Stop(id: "demo_3001", name: "Ballard", latitude: 47.6687, longitude: -122.3846),
                Stop(id: "demo_3002", name: "Fremont", latitude: 47.6510, longitude: -122.3500),
                Stop(id: "demo_1005", name: "Capitol Hill Station", latitude: 47.6191, longitude: -122.3204),
                Stop(id: "demo_3004", name: "Central District", latitude: 47.6089, longitude: -122.2979),
                Stop(id: "demo_3005", name: "Mount Baker", latitude: 47.5764, longitude: -122.2970),
            ], fleetSize: 5),
    ]

    /// Every stop once (some routes share stops).
    static var stops: [Stop] {
        var seen = Set<String>()
        return routes.flatMap(\.stops).filter { seen.insert($0.id).inserted }
    }

    static func stop(id: String) -> Stop? { stops.first { $0.id == id } }
    static func route(id: String) -> Route? { routes.first { $0.id == id } }
    static func routes(servingStop id: String) -> [Route] { routes.filter { $0.stops.contains { $0.id == id } } }

    static let dayMillis: Int64 = 86_400_000

    /// The UTC midnight starting the day `now` is in (the demo's service date).
    static func serviceDay(of now: EpochMillis) -> EpochMillis { EpochMillis(now.value - ((now.value % dayMillis) + dayMillis) % dayMillis) }

    /// A trip: one route, one direction, one departure minute of the service day.
    struct Trip: Sendable, Equatable {
        let route: Route
        let direction: Int
        /// Minutes after the service date's midnight (UTC) at which it leaves its first stop.
        let startMinute: Int
        let serviceDate: EpochMillis

        var id: String { "\(route.id)_\(direction)_\(startMinute)" }
        var headsign: String { route.headsign(direction: direction) }
        var vehicleID: String { "demo_v\(route.shortName)\(direction)\(startMinute / route.headwayMinutes % route.fleetSize)" }
        var start: EpochMillis { serviceDate.adding(millis: Int64(startMinute) * 60_000) }
        var end: EpochMillis { start.adding(millis: Int64(route.tripMinutes) * 60_000) }

        static func == (lhs: Trip, rhs: Trip) -> Bool { lhs.id == rhs.id && lhs.serviceDate == rhs.serviceDate }

        /// Scheduled time at the stop of this (0-based) sequence.
        func scheduled(at sequence: Int) -> EpochMillis { start.adding(millis: Int64(sequence * route.minutesBetweenStops) * 60_000) }

        /// Seconds late (negative: early) as predicted at `now`: the trip's
        /// own lateness, plus a drift of up to 60 s with a 20-minute period
        /// (so a prediction moves by at most a fifth of a second a second).
        func deviationSeconds(now: EpochMillis) -> Int {
            let seed = DemoTransit.hash(id + String(serviceDate.value))
            let base = Int(seed % 301) - 60
            let phase = Double(seed % 628) / 100
            let drift = 60 * sin(Date(epochMillis: now.value).timeIntervalSince1970 / 1200 * 2 * .pi + phase)
            return base + Int(drift.rounded())
        }

        /// Real-time data exists from ten minutes before departure until the end.
        func isPredicted(now: EpochMillis) -> Bool { now >= start.adding(millis: -600_000) && now <= end.adding(millis: 300_000) }
    }

    /// The trip a trip id names on a service date, if it runs.
    static func trip(id: String, serviceDate: EpochMillis) -> Trip? {
        let parts = id.split(separator: "_")
        guard parts.count == 4, let route = route(id: parts[0] + "_" + parts[1]), let direction = Int(parts[2]), (0...1).contains(direction),
            let minute = Int(parts[3]), minute >= 0, minute < 1440, minute % route.headwayMinutes == 0,
            serviceDate.value % dayMillis == 0
        else { return nil }
        return Trip(route: route, direction: direction, startMinute: minute, serviceDate: serviceDate)
    }

    /// One trip's visit to one stop.
    struct Visit: Sendable {
        let trip: Trip
        let stop: Stop
        /// 0-based position in the trip.
        let sequence: Int
        let scheduled: EpochMillis
        /// Nil when the trip has no real-time data yet.
        let predicted: EpochMillis?

        var expected: EpochMillis { predicted ?? scheduled }
    }

    static func visit(_ trip: Trip, stopID: String, now: EpochMillis) -> Visit? {
        guard let sequence = trip.route.stops(direction: trip.direction).firstIndex(where: { $0.id == stopID }) else { return nil }
        let scheduled = trip.scheduled(at: sequence)
        let predicted = trip.isPredicted(now: now) ? scheduled.adding(seconds: Int64(trip.deviationSeconds(now: now))) : nil
        return Visit(
            trip: trip, stop: trip.route.stops(direction: trip.direction)[sequence], sequence: sequence, scheduled: scheduled,
            predicted: predicted)
    }

    /// Visits to a stop expected (or scheduled) between `from` and `to`.
    static func visits(stopID: String, from: EpochMillis, to: EpochMillis, now: EpochMillis) -> [Visit] {
        var found: [Visit] = []
        let today = serviceDay(of: now)
        for route in routes(servingStop: stopID) {
            for direction in 0...1 {
                for serviceDate in [today.adding(millis: -dayMillis), today, today.adding(millis: dayMillis)] {
                    for startMinute in stride(from: 0, to: 1440, by: route.headwayMinutes) {
                        let trip = Trip(route: route, direction: direction, startMinute: startMinute, serviceDate: serviceDate)
                        // Cheap bounds first: the trip's whole span, with slack for lateness.
                        guard trip.end.adding(millis: 600_000) >= from, trip.start.adding(millis: -600_000) <= to,
                            let visit = visit(trip, stopID: stopID, now: now)
                        else { continue }
                        if (from...to).contains(visit.expected) || (from...to).contains(visit.scheduled) { found.append(visit) }
                    }
                }
            }
        }
        return found.sorted { ($0.expected, $0.trip.id) < ($1.expected, $1.trip.id) }
    }

    /// Trips under way now (each has its vehicle out).
    static func activeTrips(now: EpochMillis) -> [Trip] {
        let today = serviceDay(of: now)
        var trips: [Trip] = []
        for route in routes {
            for direction in 0...1 {
                for serviceDate in [today.adding(millis: -dayMillis), today] {
                    for startMinute in stride(from: 0, to: 1440, by: route.headwayMinutes) {
                        let trip = Trip(route: route, direction: direction, startMinute: startMinute, serviceDate: serviceDate)
                        if trip.start <= now && now <= trip.end.adding(seconds: Int64(max(trip.deviationSeconds(now: now), 0))) { trips.append(trip) }
                    }
                }
            }
        }
        return trips
    }

    /// A stable 64-bit FNV-1a hash (Swift's own hash is seeded per process).
    static func hash(_ text: String) -> UInt64 {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            value ^= UInt64(byte)
            value = value &* 0x100_0000_01b3
        }
        return value
    }

    /// The region the directory lists for the demo (its server is this process).
    static func region(id: Int, obaBaseURL: String) -> Region {
        Region(
            id: id, name: "Demo (simulated)", obaBaseURL: obaBaseURL, sidecarBaseURL: nil,
            bounds: [Region.Bounds(lat: 47.56, lon: -122.32, latSpan: 0.24, lonSpan: 0.11)])
    }
}

#if canImport(Glibc)
import Glibc
#endif
