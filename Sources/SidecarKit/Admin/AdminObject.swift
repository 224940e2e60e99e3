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

/// Finds the region an object belongs to from its id, for the kit's check:
/// nil when there is no such object.
struct AdminObjectRegions: Sendable {
    let alert: @Sendable (Int64) async throws -> Int?
    let survey: @Sendable (Int64) async throws -> Int?
    let source: @Sendable (Int64) async throws -> Int?

    init(_ stores: FeatureContext.Stores) {
        let alerts = stores.alerts, surveys = stores.surveys, sources = stores.alertSources
        alert = { try await alerts.find(id: $0)?.regionID }
        survey = { try await surveys.survey(id: $0)?.regionID }
        source = { try await sources.source(id: $0)?.0.regionID }
    }

    /// The region of `object` number `id`; nil for no such object, or for an
    /// object that is not of a region.
    func region(of object: AdminObject, id: Int64) async throws -> Int? {
        switch object {
        case .alert: try await alert(id)
        case .survey: try await survey(id)
        case .source: try await source(id)
        case .none, .region, .key, .principal: nil
        }
    }
}
