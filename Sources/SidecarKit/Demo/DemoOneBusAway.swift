import Core
import FoundationEssentials
import HTTPServer

/// The OneBusAway REST API of the demo region, served by this process under
/// `/demo/oba/` (so the apps and the sidecar's own alarm checker reach it
/// like any region's server): the methods the sidecar calls, and enough of
/// the rest (stops near a place, a stop, its routes) for an app to browse.
/// Any API key is accepted.
struct DemoOneBusAway: Sendable {
    let clock: any WallClock
    static let prefix = "/demo/oba/api/where"

    var routes: [Route] {
        let json = [".json"]
        return [
            Route("GET", "\(Self.prefix)/current-time", suffixes: json) { _ in self.envelope(entry: self.currentTime) },
            Route("GET", "\(Self.prefix)/agencies-with-coverage", suffixes: json) { _ in self.agenciesWithCoverage() },
            Route("GET", "\(Self.prefix)/agency/:agency", suffixes: json) { request in
                request.pathParameters["agency"] == DemoTransit.agencyID ? self.envelope(entry: Self.agency) : Self.notFound
            },
            Route("GET", "\(Self.prefix)/routes-for-agency/:agency", suffixes: json) { request in
                guard request.pathParameters["agency"] == DemoTransit.agencyID else { return Self.notFound }
                return self.list(DemoTransit.routes.map(Self.route), references: self.references(routes: DemoTransit.routes))
            },
            Route("GET", "\(Self.prefix)/route/:route", suffixes: json) { request in
                guard let route = DemoTransit.route(id: request.pathParameters["route"] ?? "") else { return Self.notFound }
                return self.envelope(entry: Self.route(route), references: self.references(routes: [route]))
            },
            Route("GET", "\(Self.prefix)/stops-for-location", suffixes: json) { _ in
                self.list(DemoTransit.stops.map(Self.stop), references: self.references(routes: DemoTransit.routes))
            },
            Route("GET", "\(Self.prefix)/stop/:stop", suffixes: json) { request in
                guard let stop = DemoTransit.stop(id: request.pathParameters["stop"] ?? "") else { return Self.notFound }
                return self.envelope(entry: Self.stop(stop), references: self.references(routes: DemoTransit.routes(servingStop: stop.id)))
            },
            Route("GET", "\(Self.prefix)/stops-for-route/:route", suffixes: json) { request in
                guard let route = DemoTransit.route(id: request.pathParameters["route"] ?? "") else { return Self.notFound }
                return self.envelope(
                    entry: .object([
                        "routeId": .string(route.id), "stopIds": .array(route.stops.map { .string($0.id) }),
                        "polylines": .array([]), "stopGroupings": .array([]),
                    ]),
                    references: self.references(routes: [route], stops: route.stops))
            },
            Route("GET", "\(Self.prefix)/arrivals-and-departures-for-stop/:stop", suffixes: json) { request in self.arrivals(request) },
            Route("GET", "\(Self.prefix)/arrival-and-departure-for-stop/:stop", suffixes: json) { request in self.arrival(request) },
            Route("GET", "\(Self.prefix)/trip-details/:trip", suffixes: json) { request in self.tripDetails(request) },
            // A trip as a scoped alert's check asks for it (any service day).
            Route("GET", "\(Self.prefix)/trip/:trip", suffixes: json) { request in
                guard let trip = DemoTransit.trip(id: request.pathParameters["trip"] ?? "", serviceDate: DemoTransit.serviceDay(of: self.now))
                else { return Self.notFound }
                return self.envelope(
                    entry: .object([
                        "id": .string(trip.id), "routeId": .string(trip.route.id), "tripHeadsign": .string(trip.headsign),
                        "serviceId": .string("demo_weekday"),
                    ]), references: self.references(routes: [trip.route]))
            },
            Route("GET", "\(Self.prefix)/vehicles-for-agency/:agency", suffixes: json) { request in
                guard request.pathParameters["agency"] == DemoTransit.agencyID else { return Self.notFound }
                let now = self.now
                return self.list(
                    DemoTransit.activeTrips(now: now).map { self.vehicleStatus($0, now: now) },
                    references: self.references(routes: DemoTransit.routes))
            },
        ]
    }

    var now: EpochMillis { clock.nowMillis }

    // MARK: Envelopes

    func envelope(entry: JSONValue, references: JSONValue = DemoOneBusAway.emptyReferences) -> Response {
        Self.json([
            "code": .integer(200), "currentTime": .integer(now.value), "text": .string("OK"), "version": .integer(2),
            "data": .object(["entry": entry, "references": references]),
        ])
    }

    func list(_ items: [JSONValue], references: JSONValue) -> Response {
        Self.json([
            "code": .integer(200), "currentTime": .integer(now.value), "text": .string("OK"), "version": .integer(2),
            "data": .object(["list": .array(items), "limitExceeded": .bool(false), "outOfRange": .bool(false), "references": references]),
        ])
    }

    static var notFound: Response {
        json(["code": .integer(404), "text": .string("resource not found"), "version": .integer(2), "currentTime": .integer(0)], status: 404)
    }

    static func json(_ members: [String: JSONValue], status: Int = 200) -> Response {
        Response.bytes(status, contentType: "application/json; charset=utf-8", JSONValue.object(members).encoded())
    }

    static let emptyReferences = JSONValue.object([
        "agencies": .array([]), "routes": .array([]), "stops": .array([]), "trips": .array([]),
        "situations": .array([]), "stopTimes": .array([]),
    ])

    func references(routes: [DemoTransit.Route], stops: [DemoTransit.Stop] = [], trips: [DemoTransit.Trip] = []) -> JSONValue {
        .object([
            "agencies": .array([Self.agency]), "routes": .array(routes.map(Self.route)), "stops": .array(stops.map(Self.stop)),
            "trips": .array(trips.map(Self.trip)), "situations": .array([]), "stopTimes": .array([]),
        ])
    }

    // MARK: Elements

    var currentTime: JSONValue { .object(["time": .integer(now.value), "readableTime": .string(Timestamp.format(millis: now.value))]) }

    static let agency = JSONValue.object([
        "id": .string(DemoTransit.agencyID), "name": .string(DemoTransit.agencyName), "url": .string("https://onebusaway.org"),
        "timezone": .string(DemoTransit.timezone), "lang": .string("en"), "phone": .string(""), "disclaimer": .string("Simulated service"),
        "privateService": .bool(false),
    ])

    func agenciesWithCoverage() -> Response {
        list(
            [
                .object([
                    "agencyId": .string(DemoTransit.agencyID), "lat": .double(47.556), "lon": .double(-122.332),
                    "latSpan": .double(0.25), "lonSpan": .double(0.12),
                ])
            ], references: references(routes: []))
    }

    static func route(_ route: DemoTransit.Route) -> JSONValue {
        .object([
            "id": .string(route.id), "shortName": .string(route.shortName), "longName": .string(route.longName),
            "description": .string(route.longName), "agencyId": .string(DemoTransit.agencyID), "type": .integer(3),
            "color": .string(route.color), "textColor": .string("FFFFFF"), "url": .string(""), "nullSafeShortName": .string(route.shortName),
        ])
    }

    static func stop(_ stop: DemoTransit.Stop) -> JSONValue {
        .object([
            "id": .string(stop.id), "name": .string(stop.name), "code": .string(String(stop.id.dropFirst(5))), "lat": .double(stop.latitude),
            "lon": .double(stop.longitude), "direction": .string(""), "locationType": .integer(0), "wheelchairBoarding": .string("ACCESSIBLE"),
            "routeIds": .array(DemoTransit.routes(servingStop: stop.id).map { .string($0.id) }),
        ])
    }

    static func trip(_ trip: DemoTransit.Trip) -> JSONValue {
        .object([
            "id": .string(trip.id), "routeId": .string(trip.route.id), "tripHeadsign": .string(trip.headsign),
            "directionId": .string(String(trip.direction)), "serviceId": .string("demo_daily"), "blockId": .string(trip.vehicleID),
            "shapeId": .string(""), "routeShortName": .string(trip.route.shortName), "tripShortName": .string(""),
        ])
    }

    func tripStatus(_ trip: DemoTransit.Trip, now: EpochMillis) -> JSONValue {
        let predicted = trip.isPredicted(now: now)
        let stops = trip.route.stops(direction: trip.direction)
        let deviation = predicted ? trip.deviationSeconds(now: now) : 0
        // The next stop the bus has not yet reached.
        let next = stops.indices.first { trip.scheduled(at: $0).adding(seconds: Int64(deviation)) > now } ?? stops.count - 1
        let position = JSONValue.object(["lat": .double(stops[next].latitude), "lon": .double(stops[next].longitude)])
        return .object([
            "activeTripId": .string(trip.id), "serviceDate": .integer(trip.serviceDate.value), "scheduleDeviation": .integer(Int64(deviation)),
            "predicted": .bool(predicted), "vehicleId": .string(predicted ? trip.vehicleID : ""), "status": .string("default"),
            "phase": .string(now < trip.start ? "layover_before" : "in_progress"), "nextStop": .string(stops[next].id),
            "closestStop": .string(stops[next].id), "position": position, "lastKnownLocation": position,
            "lastUpdateTime": .integer(predicted ? now.adding(millis: -15_000).value : 0),
            "totalDistanceAlongTrip": .double(Double(stops.count - 1) * 1200),
        ])
    }

    func entry(_ visit: DemoTransit.Visit, now: EpochMillis) -> JSONValue {
        let trip = visit.trip
        let predicted = visit.predicted != nil
        let stops = trip.route.stops(direction: trip.direction)
        let passed = stops.indices.filter { trip.scheduled(at: $0).adding(seconds: Int64(predicted ? trip.deviationSeconds(now: now) : 0)) <= now }
            .count
        return .object([
            "stopId": .string(visit.stop.id), "tripId": .string(trip.id), "routeId": .string(trip.route.id),
            "routeShortName": .string(trip.route.shortName), "routeLongName": .string(trip.route.longName), "tripHeadsign": .string(trip.headsign),
            "serviceDate": .integer(trip.serviceDate.value), "stopSequence": .integer(Int64(visit.sequence)),
            "totalStopsInTrip": .integer(Int64(stops.count)), "blockTripSequence": .integer(0),
            "vehicleId": .string(predicted ? trip.vehicleID : ""), "predicted": .bool(predicted),
            "scheduledArrivalTime": .integer(visit.scheduled.value), "scheduledDepartureTime": .integer(visit.scheduled.value),
            "predictedArrivalTime": .integer(visit.predicted?.value ?? 0), "predictedDepartureTime": .integer(visit.predicted?.value ?? 0),
            "lastUpdateTime": .integer(predicted ? now.adding(millis: -15_000).value : 0),
            "numberOfStopsAway": .integer(Int64(visit.sequence - passed)),
            "distanceFromStop": .double(Double(max(visit.sequence - passed, 0)) * 1200), "arrivalEnabled": .bool(visit.sequence > 0),
            "departureEnabled": .bool(visit.sequence < stops.count - 1), "status": .string("default"), "frequency": .null,
            "tripStatus": tripStatus(trip, now: now),
        ])
    }

    func vehicleStatus(_ trip: DemoTransit.Trip, now: EpochMillis) -> JSONValue {
        .object([
            "vehicleId": .string(trip.vehicleID), "tripId": .string(trip.id), "lastUpdateTime": .integer(now.adding(millis: -15_000).value),
            "status": .string("IN_SERVICE"), "phase": .string("in_progress"), "tripStatus": tripStatus(trip, now: now),
        ])
    }

    // MARK: Methods

    /// `minutesBefore` (default 5) and `minutesAfter` (default 35), capped at a day.
    func arrivals(_ request: Request) -> Response {
        guard let stop = DemoTransit.stop(id: request.pathParameters["stop"] ?? "") else { return Self.notFound }
        let now = self.now
        let before = min(max(Int64(request.parameters["minutesBefore"] ?? "") ?? 5, 0), 1440)
        let after = min(max(Int64(request.parameters["minutesAfter"] ?? "") ?? 35, 0), 1440)
        let visits = DemoTransit.visits(stopID: stop.id, from: now.adding(millis: -before * 60_000), to: now.adding(millis: after * 60_000), now: now)
        let entry = JSONValue.object([
            "stopId": .string(stop.id), "arrivalsAndDepartures": .array(visits.map { self.entry($0, now: now) }),
            "nearbyStopIds": .array([]), "situationIds": .array([]),
        ])
        return envelope(
            entry: entry,
            references: references(
                routes: DemoTransit.routes(servingStop: stop.id), stops: [stop],
                trips: visits.map { $0.trip }))
    }

    func arrival(_ request: Request) -> Response {
        guard let stopID = request.pathParameters["stop"], let tripID = request.parameters["tripId"],
            let serviceDate = Int64(request.parameters["serviceDate"] ?? "").map({ EpochMillis($0) }),
            let trip = DemoTransit.trip(id: tripID, serviceDate: serviceDate),
            let visit = DemoTransit.visit(trip, stopID: stopID, now: now)
        else { return Self.notFound }
        return envelope(entry: entry(visit, now: now), references: references(routes: [trip.route], stops: [visit.stop], trips: [trip]))
    }

    func tripDetails(_ request: Request) -> Response {
        let now = self.now
        let serviceDate = Int64(request.parameters["serviceDate"] ?? "").map { EpochMillis($0) } ?? DemoTransit.serviceDay(of: now)
        guard let trip = DemoTransit.trip(id: request.pathParameters["trip"] ?? "", serviceDate: serviceDate) else { return Self.notFound }
        let stops = trip.route.stops(direction: trip.direction)
        let stopTimes = stops.indices.map { index -> JSONValue in
            let seconds = Int64(trip.startMinute * 60 + index * trip.route.minutesBetweenStops * 60)
            return .object([
                "stopId": .string(stops[index].id), "arrivalTime": .integer(seconds), "departureTime": .integer(seconds),
                "distanceAlongTrip": .double(Double(index) * 1200), "stopHeadsign": .string(""),
            ])
        }
        let entry = JSONValue.object([
            "tripId": .string(trip.id), "serviceDate": .integer(trip.serviceDate.value), "frequency": .null, "situationIds": .array([]),
            "status": tripStatus(trip, now: now),
            "schedule": .object([
                "timeZone": .string(DemoTransit.timezone), "stopTimes": .array(stopTimes), "previousTripId": .string(""),
                "nextTripId": .string(""), "frequency": .null,
            ]),
        ])
        return envelope(entry: entry, references: references(routes: [trip.route], stops: stops, trips: [trip]))
    }
}
