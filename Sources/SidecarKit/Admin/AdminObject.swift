import HTTPServer

/// What an admin API route acts on, declared with the route and named by
/// the path parameter of the same name. The kit resolves it before the
/// handler runs, so no handler can forget the check: a region, or an object
/// of a region, the key may not act on is answered exactly like one that
/// does not exist (404).
enum AdminObject: String, Sendable, CaseIterable {
    /// Nothing in the path: a list across the key's regions, the audit log,
    /// or a creation of keys and principals.
    case none
    /// `:region`, a region of the directory.
    case region
    /// `:alert`, `:survey` and `:source`: an object of one region, by id.
    case alert, survey, source
    /// `:key` and `:principal`: a credential; who may manage which one is
    /// the key routes' own rule (a principal's keys, an admin's regions).
    case key, principal

    /// The path parameter that names the object; nil for `.none`.
    var parameter: String? { self == .none ? nil : rawValue }

    /// Whether the object is of one region, checked against the key's.
    var isOfARegion: Bool {
        switch self {
        case .region, .alert, .survey, .source: true
        case .none, .key, .principal: false
        }
    }

    /// The object as a 404 names it.
    var noun: String {
        switch self {
        case .none: "object"
        case .source: "alert source"
        case .principal: "service principal"
        case .region, .alert, .survey, .key: rawValue
        }
    }
}

/// Finds an object from its id, with the region it belongs to, for the
/// kit's check: nil when there is no such object.
struct AdminObjectRegions: Sendable {
    typealias Found = (region: Int, object: any Sendable)
    let alert: @Sendable (Int64) async throws -> Found?
    let survey: @Sendable (Int64) async throws -> Found?
    let source: @Sendable (Int64) async throws -> Found?

    init(_ stores: FeatureServices.Stores) {
        let alerts = stores.alerts, surveys = stores.surveys, sources = stores.alertSources
        alert = { id in try await alerts.find(id: id).map { ($0.regionID, $0) } }
        survey = { id in try await surveys.survey(id: id).map { ($0.regionID, $0) } }
        source = { id in try await sources.source(id: id).map { ($0.0.regionID, $0) } }
    }

    /// `object` number `id` and its region; nil for no such object, or for
    /// an object that is not of a region.
    func find(_ object: AdminObject, id: Int64) async throws -> Found? {
        switch object {
        case .alert: try await alert(id)
        case .survey: try await survey(id)
        case .source: try await source(id)
        case .none, .region, .key, .principal: nil
        }
    }
}

/// The object the kit resolved for the handler running now, so the handler
/// uses it instead of reading the same row again (nil outside a handler,
/// and for routes whose object is a region, a credential or nothing).
enum AdminResolved {
    @TaskLocal static var object: (any Sendable)?

    /// The resolved object when it is a `T` that `matches`, else what
    /// `read` finds (a handler run outside a route, or another object).
    static func reuse<T>(_ type: T.Type, matching matches: (T) -> Bool, else read: () async throws -> T?) async throws -> T? {
        if let resolved = object as? T, matches(resolved) { return resolved }
        return try await read()
    }
}
