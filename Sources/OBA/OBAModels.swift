import Core

/// One arrival and departure of a trip at a stop, as the OneBusAway REST API
/// reports it (`arrivalAndDeparture`). Every field is optional: servers
/// differ, and a missing field must never fail a whole response.
public struct ArrivalAndDeparture: Decodable, Sendable, Equatable {
    public var stopId: String?
    public var tripId: String?
    public var routeId: String?
    public var routeShortName: String?
    public var routeLongName: String?
    public var tripHeadsign: String?
    /// Epoch milliseconds of the service day's midnight (OBA convention).
    public var serviceDate: EpochMillis?
    public var stopSequence: Int?
    public var vehicleId: String?
    public var predicted: Bool?
    /// Epoch milliseconds; 0 when there is no prediction.
    public var predictedArrivalTime: EpochMillis?
    public var predictedDepartureTime: EpochMillis?
    public var scheduledArrivalTime: EpochMillis?
    public var scheduledDepartureTime: EpochMillis?
    /// Epoch milliseconds of the last real-time update.
    public var lastUpdateTime: EpochMillis?
    public var tripStatus: TripStatus?

    public init(
        stopId: String? = nil, tripId: String? = nil, routeId: String? = nil, routeShortName: String? = nil,
        routeLongName: String? = nil, tripHeadsign: String? = nil, serviceDate: EpochMillis? = nil, stopSequence: Int? = nil,
        vehicleId: String? = nil, predicted: Bool? = nil, predictedArrivalTime: EpochMillis? = nil,
        predictedDepartureTime: EpochMillis? = nil, scheduledArrivalTime: EpochMillis? = nil, scheduledDepartureTime: EpochMillis? = nil,
        lastUpdateTime: EpochMillis? = nil, tripStatus: TripStatus? = nil
    ) {
        self.stopId = stopId
        self.tripId = tripId
        self.routeId = routeId
        self.routeShortName = routeShortName
        self.routeLongName = routeLongName
        self.tripHeadsign = tripHeadsign
        self.serviceDate = serviceDate
        self.stopSequence = stopSequence
        self.vehicleId = vehicleId
        self.predicted = predicted
        self.predictedArrivalTime = predictedArrivalTime
        self.predictedDepartureTime = predictedDepartureTime
        self.scheduledArrivalTime = scheduledArrivalTime
        self.scheduledDepartureTime = scheduledDepartureTime
        self.lastUpdateTime = lastUpdateTime
        self.tripStatus = tripStatus
    }

    /// The real-time status of the trip serving this arrival.
    public struct TripStatus: Decodable, Sendable, Equatable {
        public var scheduleDeviation: Int?
        public var predicted: Bool?
        public var vehicleId: String?
        public var activeTripId: String?
        /// `default`, or `CANCELED` when the feed cancelled the trip (OBA
        /// sets it from GTFS-realtime's schedule relationship).
        public var status: String?

        public init(
            scheduleDeviation: Int? = nil, predicted: Bool? = nil, vehicleId: String? = nil, activeTripId: String? = nil, status: String? = nil
        ) {
            self.scheduleDeviation = scheduleDeviation
            self.predicted = predicted
            self.vehicleId = vehicleId
            self.activeTripId = activeTripId
            self.status = status
        }

        /// Whether the trip will not run (either spelling of cancelled).
        public var cancelled: Bool {
            guard let status = status?.uppercased() else { return false }
            return status == "CANCELED" || status == "CANCELLED"
        }
    }

    /// The departure time the spec's rules use: predicted when the entry is
    /// predicted and the prediction is positive, else scheduled (ms).
    public var effectiveDepartureTime: EpochMillis? {
        if predicted == true, let predicted = predictedDepartureTime, predicted.value > 0 { return predicted }
        return scheduledDepartureTime
    }
}

/// A route from the response's references.
public struct RouteReference: Decodable, Sendable, Equatable {
    public var id: String
    public var shortName: String?
    public var longName: String?

    public init(id: String, shortName: String?, longName: String?) {
        self.id = id
        self.shortName = shortName
        self.longName = longName
    }
}

/// A stop from the response's references.
public struct StopReference: Decodable, Sendable, Equatable {
    public var id: String
    public var name: String?
    /// The code riders see on the pole.
    public var code: String?
    public var direction: String?
    public var routeIds: [String]?

    public init(id: String, name: String?, code: String?, direction: String? = nil, routeIds: [String]? = nil) {
        self.id = id
        self.name = name
        self.code = code
        self.direction = direction
        self.routeIds = routeIds
    }
}

/// The `references` block (only what the sidecar reads).
public struct References: Decodable, Sendable, Equatable {
    public var routes: [RouteReference]?
    public var stops: [StopReference]?

    public init(routes: [RouteReference]?, stops: [StopReference]? = nil) {
        self.routes = routes
        self.stops = stops
    }

    enum CodingKeys: String, CodingKey { case routes, stops }

    /// A malformed list is read as absent rather than failing the response.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        routes = try? container.decodeIfPresent([RouteReference].self, forKey: .routes)
        stops = try? container.decodeIfPresent([StopReference].self, forKey: .stops)
    }

    public func route(id: String?) -> RouteReference? {
        guard let id else { return nil }
        return routes?.first { $0.id == id }
    }

    public func stop(id: String?) -> StopReference? {
        guard let id else { return nil }
        return stops?.first { $0.id == id }
    }
}

/// `arrivals-and-departures-for-stop`'s entry.
public struct StopArrivals: Decodable, Sendable, Equatable {
    public var stopId: String?
    public var arrivalsAndDepartures: [ArrivalAndDeparture]

    enum CodingKeys: String, CodingKey { case stopId, arrivalsAndDepartures }

    public init(stopId: String?, arrivalsAndDepartures: [ArrivalAndDeparture]) {
        self.stopId = stopId
        self.arrivalsAndDepartures = arrivalsAndDepartures
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        stopId = try container.decodeIfPresent(String.self, forKey: .stopId)
        arrivalsAndDepartures = try container.decodeIfPresent([ArrivalAndDeparture].self, forKey: .arrivalsAndDepartures) ?? []
    }
}

/// A successful lookup: the entry, the server's clock and the references.
public struct OBAResponse<Entry: Sendable>: Sendable {
    /// The OBA server's `currentTime` (epoch ms); rules measure against it,
    /// not against this machine's clock.
    public var currentTime: EpochMillis
    public var entry: Entry
    public var references: References?

    public init(currentTime: EpochMillis, entry: Entry, references: References? = nil) {
        self.currentTime = currentTime
        self.entry = entry
        self.references = references
    }
}

/// Why a lookup produced no entry. The distinction matters: a trip that
/// aged out of the feed is `notFound` (an alarm on it is eventually reaped),
/// while a network or server hiccup is `transient` (it must not count).
public enum OBAError: Error, Equatable, Sendable {
    /// HTTP 404, envelope code 404, or an empty entry.
    case notFound
    /// Timeout, refused connection, 5xx, a malformed body, an unusable key...
    case transient(String)
}

/// An agency from `agencies-with-coverage` (id from the list, name from references).
public struct AgencyCoverage: Sendable, Equatable {
    public var id: String
    public var name: String
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// `vehicles-for-agency` list entries (only the id is used).
public struct VehicleStatus: Decodable, Sendable, Equatable {
    public var vehicleId: String?
}

/// A list-shaped response (`data.list`).
struct ListPayload<Item: Decodable>: Decodable {
    var list: [Item]?
    var references: AgencyReferences?
}

struct AgencyReferences: Decodable {
    struct Agency: Decodable {
        var id: String
        var name: String?
    }
    var agencies: [Agency]?
}

struct CoverageItem: Decodable { var agencyId: String? }

struct ListEnvelope<Item: Decodable>: Decodable {
    var code: Int?
    var text: String?
    var data: ListPayload<Item>?
}
