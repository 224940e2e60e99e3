import Foundation

// The JSON a sidecar answers, as Codable models. Field names follow
// `Tests/Fixtures/spec/openapi.yaml`; everything the spec does not mark required
// is optional, so a server that omits a field still decodes.

/// Any JSON value: for the few fields whose shape belongs to someone else
/// (an external survey provider's SDK configuration).
public enum SidecarJSON: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([SidecarJSON])
    case object([String: SidecarJSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([SidecarJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: SidecarJSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// MARK: Surveys

/// `GET /api/v1/regions/{id}/surveys.json`: the surveys active now.
public struct SurveyList: Codable, Equatable, Sendable {
    public struct Region: Codable, Equatable, Sendable {
        public var id: Int
        public var name: String
    }

    public var surveys: [Survey]
    public var region: Region
}

public struct Survey: Codable, Equatable, Sendable {
    public struct Study: Codable, Equatable, Sendable {
        public var id: Int
        public var name: String
        public var description: String?
    }

    public struct Question: Codable, Equatable, Sendable {
        public struct Content: Codable, Equatable, Sendable {
            /// `text`, `label`, `radio`, `checkbox` or `external_survey`.
            public var type: String
            public var labelText: String
            /// The choices of `radio` and `checkbox` questions.
            public var options: [String]?
            /// `external_survey` only.
            public var url: String?
            public var surveyProvider: String?
            public var embeddedDataFields: [String]?
            public var sdkConfigurationValues: [String: SidecarJSON]?

            enum CodingKeys: String, CodingKey {
                case type, options, url
                case labelText = "label_text"
                case surveyProvider = "survey_provider"
                case embeddedDataFields = "embedded_data_fields"
                case sdkConfigurationValues = "sdk_configuration_values"
            }
        }

        public var id: Int
        /// 1-based display order.
        public var position: Int
        public var required: Bool
        public var content: Content
    }

    public var id: Int
    public var name: String
    /// ISO 8601, or nil when the survey has no schedule.
    public var startDate: String?
    public var endDate: String?
    public var showOnMap: Bool?
    public var showOnStops: Bool?
    public var alwaysVisible: Bool?
    public var allowsMultipleResponses: Bool?
    /// Stop ids the survey is limited to; nil means everywhere.
    public var visibleStopList: [String]?
    /// Route ids the survey is limited to; nil means everywhere.
    public var visibleRouteList: [String]?
    public var study: Study
    public var questions: [Question]

    enum CodingKeys: String, CodingKey {
        case id, name, study, questions
        case startDate = "start_date"
        case endDate = "end_date"
        case showOnMap = "show_on_map"
        case showOnStops = "show_on_stops"
        case alwaysVisible = "always_visible"
        case allowsMultipleResponses = "allows_multiple_responses"
        case visibleStopList = "visible_stop_list"
        case visibleRouteList = "visible_route_list"
    }
}

/// One answer in a survey response. A checkbox answer is the selected
/// options as a JSON-array-encoded string (`SurveyAnswer.checkbox`).
public struct SurveyAnswer: Codable, Equatable, Sendable {
    public var questionID: Int
    public var questionType: String?
    /// The question's label when answered (kept for exports).
    public var questionLabel: String?
    public var answer: String

    public init(questionID: Int, questionType: String?, questionLabel: String?, answer: String) {
        self.questionID = questionID
        self.questionType = questionType
        self.questionLabel = questionLabel
        self.answer = answer
    }

    /// A checkbox question's answer: the selected options, JSON-encoded.
    public static func checkbox(questionID: Int, questionLabel: String?, selected: [String]) -> SurveyAnswer {
        let encoded = (try? JSONEncoder().encode(selected)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        return SurveyAnswer(questionID: questionID, questionType: "checkbox", questionLabel: questionLabel, answer: encoded)
    }

    enum CodingKeys: String, CodingKey {
        case answer
        case questionID = "question_id"
        case questionType = "question_type"
        case questionLabel = "question_label"
    }
}

/// Where a survey was answered (required by surveys that ask for a stop).
public struct SurveyStop: Equatable, Sendable {
    public var stopID: String
    public var latitude: Double
    public var longitude: Double

    public init(stopID: String, latitude: Double, longitude: Double) {
        self.stopID = stopID
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A recorded survey response: amend it through `updatePath`.
public struct SurveyResponseReceipt: Codable, Equatable, Sendable {
    public var id: String
    public var userIdentifier: String
    /// Relative path, e.g. `/api/v1/survey_responses/9f3c…`.
    public var updatePath: String

    enum CodingKeys: String, CodingKey {
        case id
        case userIdentifier = "user_identifier"
        case updatePath = "update_path"
    }

    /// The spec's answer wraps the receipt in `survey_response`; some
    /// servers answer it bare. Both decode.
    struct Envelope: Decodable {
        let receipt: SurveyResponseReceipt

        enum Keys: String, CodingKey { case surveyResponse = "survey_response" }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            if let wrapped = try container.decodeIfPresent(SurveyResponseReceipt.self, forKey: .surveyResponse) {
                receipt = wrapped
            } else {
                receipt = try SurveyResponseReceipt(from: decoder)
            }
        }
    }
}

// MARK: Weather

/// `GET /api/v1/regions/{id}/weather.json`, in the Dark Sky-derived shape.
public struct WeatherForecast: Codable, Equatable, Sendable {
    public struct Conditions: Codable, Equatable, Sendable {
        /// Dark Sky's icon vocabulary: `clear-day`, `rain`, `snow`, `cloudy`…
        public var icon: String?
        public var summary: String?
        public var temperature: Double?
        public var temperatureFeelsLike: Double?
        public var precipPerHour: Double?
        /// 0…1.
        public var precipProbability: Double?
        public var windSpeed: Double?
        /// Epoch seconds.
        public var time: Int64?

        enum CodingKeys: String, CodingKey {
            case icon, summary, temperature, time
            case temperatureFeelsLike = "temperature_feels_like"
            case precipPerHour = "precip_per_hour"
            case precipProbability = "precip_probability"
            case windSpeed = "wind_speed"
        }
    }

    public var latitude: Double?
    public var longitude: Double?
    public var regionIdentifier: Int?
    public var regionName: String?
    public var retrievedAt: String?
    /// `us` or `si` (Dark Sky's unit systems).
    public var units: String?
    public var todaySummary: String?
    public var currentForecast: Conditions?
    public var hourlyForecast: [Conditions]?

    enum CodingKeys: String, CodingKey {
        case latitude, longitude, units
        case regionIdentifier = "region_identifier"
        case regionName = "region_name"
        case retrievedAt = "retrieved_at"
        case todaySummary = "today_summary"
        case currentForecast = "current_forecast"
        case hourlyForecast = "hourly_forecast"
    }
}

// MARK: Vehicles

/// One match of `GET /api/v1/regions/{id}/vehicles?query=`.
public struct VehicleMatch: Codable, Equatable, Sendable {
    /// The agency's id and name.
    public var id: String
    public var name: String
    public var vehicleID: String

    enum CodingKeys: String, CodingKey {
        case id, name
        case vehicleID = "vehicle_id"
    }
}

// MARK: Ghost-bus reports

/// A rider's report that a predicted vehicle never came
/// (`POST /api/v2/regions/{id}/ghost_bus_reports`). Times are epoch milliseconds.
public struct GhostBusReport: Equatable, Sendable {
    public var userIdentifier: String
    public var tripID: String
    public var serviceDate: Int64
    /// 5, 10, 15, 20 or 30 (meaning 30 or more).
    public var waitDurationMinutes: Int
    public var routeID: String?
    public var stopID: String?
    public var vehicleID: String?
    public var stopSequence: Int?
    public var predicted: Bool?
    public var scheduleDeviationMinutes: Int?
    public var comment: String?
    public var userLatitude: Double?
    public var userLongitude: Double?
    public var scheduledArrivalAt: Int64?
    public var predictedArrivalAt: Int64?
    public var predictionLastUpdatedAt: Int64?

    public init(userIdentifier: String, tripID: String, serviceDate: Int64, waitDurationMinutes: Int) {
        self.userIdentifier = userIdentifier
        self.tripID = tripID
        self.serviceDate = serviceDate
        self.waitDurationMinutes = waitDurationMinutes
    }

    /// The form the apps post.
    var form: [(String, String)] {
        var form = [
            ("user_identifier", userIdentifier), ("trip_identifier", tripID), ("service_date", String(serviceDate)),
            ("wait_duration_minutes", String(waitDurationMinutes)),
        ]
        let optional: [(String, String?)] = [
            ("route_identifier", routeID), ("stop_identifier", stopID), ("vehicle_identifier", vehicleID),
            ("stop_sequence", stopSequence.map(String.init)),
            ("predicted", predicted.map { $0 ? "true" : "false" }), ("schedule_deviation_minutes", scheduleDeviationMinutes.map(String.init)),
            ("comment", comment), ("user_latitude", userLatitude.map { String($0) }), ("user_longitude", userLongitude.map { String($0) }),
            ("scheduled_arrival_at", scheduledArrivalAt.map(String.init)), ("predicted_arrival_at", predictedArrivalAt.map(String.init)),
            ("prediction_last_updated_at", predictionLastUpdatedAt.map(String.init)),
        ]
        for (name, value) in optional { if let value { form.append((name, value)) } }
        return form
    }
}

// MARK: Donations

/// What the Stripe PaymentSheet needs (`POST /api/v1/payment_intents`).
/// A recurring donation also carries the customer and an ephemeral key.
public struct PaymentIntent: Codable, Equatable, Sendable {
    public var clientSecret: String
    /// A per-request correlation id (not Stripe's).
    public var id: String
    public var customerID: String?
    public var ephemeralKey: String?

    enum CodingKeys: String, CodingKey {
        case id
        case clientSecret = "client_secret"
        case customerID = "customer_id"
        case ephemeralKey = "ephemeral_key"
    }
}
