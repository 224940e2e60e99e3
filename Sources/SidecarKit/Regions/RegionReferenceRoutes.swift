import Core
import HTTPServer

/// Regions in the Go reference's admin contract (`GET /regions`,
/// `GET, PATCH /regions/{regionId}`): the directory's region with its
/// settings, what this server offers there (`features`), and the agency id
/// and time zone set through the same code as `sidecar region set`.
struct RegionReferenceRoutes: Sendable {
    let api: ReferenceAdminAPI
    let regions: RegionDirectory
    /// The features this server offers in every region, in the reference's order.
    let features: [String]
    /// Regions with an OneBusAway key of their own, and whether the server has a default one.
    let regionKeys: Set<Int>
    let hasDefaultKey: Bool

    var routes: [Route] {
        [
            api.route("GET", "/regions", .operatorOnly, region: .none) { call in await list(call) },
            api.route("GET", "/regions/:regionId", .operatorOrKey) { call in await show(call) },
            api.route("PATCH", "/regions/:regionId", .operatorOrKey, person: .manageRegion) { call in await patch(call) },
        ]
    }

    /// The reference's region object; `features` only on a single region's GET.
    func json(_ region: Region, _ settings: RegionSettings?, features: [String]? = nil) -> ReferenceJSON {
        let centroid = Self.centroid(region.bounds)
        var members: [(String, ReferenceJSON)] = [
            ("id", .integer(region.id)), ("name", .string(region.name)), ("oba_base_url", .string(region.obaBaseURL ?? "")),
            ("sidecar_base_url", .string(region.sidecarBaseURL ?? "")), ("active", .bool(true)),
            ("default_agency_id", .string(settings?.agencyID ?? "")), ("timezone", .string(settings?.timezone ?? "UTC")),
            ("latitude", centroid.map { .value(.double($0.latitude)) } ?? .null),
            ("longitude", centroid.map { .value(.double($0.longitude)) } ?? .null),
            ("oba_api_key", .string(regionKeys.contains(region.id) ? "region" : hasDefaultKey ? "default" : "none")),
        ]
        if let features { members.append(("features", .array(features.map(ReferenceJSON.string)))) }
        return .object(members)
    }

    /// The area-weighted mean of the bounds' centres, as the reference
    /// computes a region's centroid; nil without bounds.
    static func centroid(_ bounds: [Region.Bounds]) -> (latitude: Double, longitude: Double)? {
        let weights = bounds.map { abs($0.latSpan * $0.lonSpan) }
        let total = weights.reduce(0, +)
        guard !bounds.isEmpty else { return nil }
        guard total > 0 else {
            return (bounds.map(\.lat).reduce(0, +) / Double(bounds.count), bounds.map(\.lon).reduce(0, +) / Double(bounds.count))
        }
        return (
            zip(bounds, weights).map { $0.lat * $1 }.reduce(0, +) / total, zip(bounds, weights).map { $0.lon * $1 }.reduce(0, +) / total
        )
    }

    func list(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let settings = try await RegionSettingsStore(database: api.administration.store.database).all()
            return ReferenceAdminAPI.json(200, .array(regions.all.filter { call.caller.allows(region: $0.id) }.map { json($0, settings[$0.id]) }))
        } catch { return api.failure(error, notFound: "region") }
    }

    func show(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let region = try api.administration.region(call.regionID)
            let settings = try await RegionSettingsStore(database: api.administration.store.database).settings(regionID: call.regionID)
            return ReferenceAdminAPI.json(200, json(region, settings, features: features))
        } catch { return api.failure(error, notFound: "region") }
    }

    /// `{default_agency_id?, timezone?, oba_api_key?}`: absent or null keeps
    /// a value, `""` clears the agency id. The OneBusAway key is the
    /// server's configuration here (`--oba-region-api-keys`), never a database
    /// row, so setting it is refused with where it is set.
    func patch(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let body = try call.body()
            let agency = try Self.optionalString(body, "default_agency_id")
            let timezone = try Self.optionalString(body, "timezone")
            let obaKey = try Self.optionalString(body, "oba_api_key")
            guard agency != nil || timezone != nil || obaKey != nil else {
                throw ReferenceFailure.badRequest("provide default_agency_id, timezone, and/or oba_api_key")
            }
            if obaKey != nil {
                throw ReferenceFailure.badRequest(
                    "oba_api_key is this server's configuration in Sidecar (--oba-region-api-keys \(call.regionID)=KEY, or its -file form), not a region setting"
                )
            }
            if let timezone {
                if timezone.isEmpty {
                    throw ReferenceFailure.badRequest("timezone must not be empty; pass an IANA zone name such as America/Los_Angeles")
                }
                if timezone == "Local" {
                    throw ReferenceFailure.badRequest("timezone \"Local\" is machine-dependent; use an explicit IANA zone name")
                }
                if timezone == "none" { throw ReferenceFailure.badRequest("invalid timezone \"none\": unknown time zone none") }
            }
            let administration = api.administration(for: call.caller)
            _ = try await administration.setRegion(
                id: call.regionID, agencyID: agency?.presence, timezone: timezone, clearsAgency: agency == "")
            let settings = try await RegionSettingsStore(database: api.administration.store.database).settings(regionID: call.regionID)
            return ReferenceAdminAPI.json(200, json(try api.administration.region(call.regionID), settings))
        } catch { return api.failure(error, notFound: "region") }
    }

    /// A member that must be a string when present; nil when absent or null.
    static func optionalString(_ body: [String: JSONValue], _ name: String) throws(ReferenceFailure) -> String? {
        switch body[name] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw .badRequest("invalid JSON body: \(name) must be a string")
        }
    }
}

extension RegionReferenceRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) {
        let configuration = context.configuration
        var features = ["alerts"]
        if context.transport != nil { features.append("pushes") }
        features += ["surveys", "ghost_bus_reports", "alarms", "push_registrations"]
        if configuration.stripeSecretKey != nil || configuration.stripeTestSecretKey != nil { features.append("donations") }
        features.append("api_keys")
        self.init(
            api: api, regions: context.regions, features: features, regionKeys: Set(configuration.obaRegionAPIKeys.keys),
            hasDefaultKey: configuration.obaAPIKey != nil)
    }
}

extension RegionReferenceRoutes: Feature {}
