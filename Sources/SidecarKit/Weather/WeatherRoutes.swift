import Core
import FoundationEssentials
import HTTPClient
import HTTPServer

/// The normalized forecast (spec §9). Every key is always present: the iOS
/// decoder requires them all, so a missing value is a zero, never an absent key.
struct WeatherForecast: Encodable, Sendable {
    struct Conditions: Encodable, Sendable {
        var icon: String
        var summary: String
        var temperature: Double
        var temperature_feels_like: Double
        var precip_per_hour: Double
        var precip_probability: Double
        var wind_speed: Double
        var time: EpochSeconds
    }
    var latitude: Double
    var longitude: Double
    var region_identifier: Int
    var region_name: String
    /// ISO 8601 with `Z`.
    var retrieved_at: String
    var units: String
    var today_summary: String
    var current_forecast: Conditions
    var hourly_forecast: [Conditions]
}

/// Spec §9 rules: the region's centre and the mapping from Pirate Weather.
enum WeatherRules {
    /// The centre of the box around all of a region's bounds.
    static func center(of region: Region) -> (latitude: Double, longitude: Double)? {
        guard !region.bounds.isEmpty else { return nil }
        let south = region.bounds.map { $0.lat - $0.latSpan / 2 }.min()!
        let north = region.bounds.map { $0.lat + $0.latSpan / 2 }.max()!
        let west = region.bounds.map { $0.lon - $0.lonSpan / 2 }.min()!
        let east = region.bounds.map { $0.lon + $0.lonSpan / 2 }.max()!
        return ((south + north) / 2, (west + east) / 2)
    }

    /// We always ask Pirate Weather for US units, so `units` says what we asked for.
    static let units = "us"

    struct PiratePoint: Decodable {
        var time: EpochSeconds?
        var summary: String?
        var icon: String?
        var precipIntensity: Double?
        var precipProbability: Double?
        var temperature: Double?
        var apparentTemperature: Double?
        var windSpeed: Double?

        var conditions: WeatherForecast.Conditions {
            .init(
                icon: icon ?? "", summary: summary ?? "", temperature: temperature ?? 0,
                temperature_feels_like: apparentTemperature ?? temperature ?? 0,
                precip_per_hour: precipIntensity ?? 0, precip_probability: min(max(precipProbability ?? 0, 0), 1), wind_speed: windSpeed ?? 0,
                time: time ?? 0)
        }
    }

    struct PirateResponse: Decodable {
        struct Series: Decodable { var data: [PiratePoint]? }
        struct DailySeries: Decodable {
            struct Day: Decodable { var summary: String? }
            var data: [Day]?
        }
        var currently: PiratePoint?
        var hourly: Series?
        var daily: DailySeries?
    }

    /// Maps a Pirate Weather (Dark Sky-compatible) body; nil when it is not one.
    static func forecast(pirate body: [UInt8], region: Region, latitude: Double, longitude: Double, retrievedAt: Date) -> WeatherForecast? {
        guard let response = try? JSONDecoder().decode(PirateResponse.self, from: Data(body)), let currently = response.currently else { return nil }
        return WeatherForecast(
            latitude: latitude, longitude: longitude, region_identifier: region.id, region_name: region.name,
            retrieved_at: retrievedAt.formatted(.iso8601), units: units,
            // The day's summary, not the week's.
            today_summary: response.daily?.data?.first?.summary ?? "",
            current_forecast: currently.conditions, hourly_forecast: (response.hourly?.data ?? []).map(\.conditions))
    }
}

/// `GET /api/v1/regions/{id}/weather` (and `.json`).
struct WeatherRoutes: Sendable {
    let regions: RegionDirectory
    let http: HTTPClient
    /// `--pirate-weather-key`; without it every request is a 403.
    let apiKey: String?
    /// `--pirate-weather-url`.
    let baseURL: String
    let cache: TimedCache<Int, [UInt8]>
    let clock: any WallClock
    let logger: Logger

    var routes: [Route] {
        [Route("GET", "/api/v1/regions/:region/weather", suffixes: [".json"], handler: weather)]
    }

    /// Spec §9: any failure is a 403 (what the apps were tested against).
    static var unavailable: Response { .json(403, [String: String]()) }

    func weather(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        if let body = cache.value(region.id) {
            return Response.bytes(200, contentType: "application/json; charset=utf-8", body).logging("region", String(region.id))
        }
        guard let apiKey, let center = WeatherRules.center(of: region) else { return Self.unavailable.logging("region", String(region.id)) }
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let url = "\(base)/forecast/\(apiKey)/\(center.latitude),\(center.longitude)?units=\(WeatherRules.units)&exclude=minutely,alerts"
        do {
            let response = try await http.get(url, upstream: "pirate_weather")
            guard response.status == 200,
                let forecast = WeatherRules.forecast(
                    pirate: response.body, region: region, latitude: center.latitude,
                    longitude: center.longitude, retrievedAt: clock.now())
            else {
                // The status only: the URL carries the key.
                logger.warning("weather provider answered unusably", [("region", String(region.id)), ("status", String(response.status))])
                return Self.unavailable.logging("region", String(region.id))
            }
            let body = Response.json(200, forecast).body
            cache.store(body, for: region.id)
            return Response.bytes(200, contentType: "application/json; charset=utf-8", body).logging("region", String(region.id))
        } catch {
            logger.warning("weather provider unreachable", [("region", String(region.id))])
            return Self.unavailable.logging("region", String(region.id))
        }
    }
}

extension WeatherRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            regions: context.regions, http: context.upstream, apiKey: context.configuration.pirateWeatherKey,
            baseURL: context.configuration.pirateWeatherURL, cache: TimedCache(lifetimeSeconds: 30 * 60, now: context.now), clock: context.clock,
            logger: context.logger)
    }
}
