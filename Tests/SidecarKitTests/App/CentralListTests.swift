import Database
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// The lists a feature joins by being named in one place (the features,
/// the stores, the operator commands, the export's coverage) each fail
/// here when a feature is missing from them, instead of the feature
/// silently not running, not being migrated, not being offered or not
/// moving with its region.
@Suite("App: every feature is in the lists that name features")
struct CentralListTests {
    /// The Swift source of the server module, file by file.
    static func sources() throws -> [(path: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Sources/SidecarKit")
            .standardizedFileURL
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        return try files.filter { $0.pathExtension == "swift" }.map { ($0.path, try String(contentsOf: $0, encoding: .utf8)) }
    }

    /// Names of the types declared (or extended) as conforming to one of `protocols`.
    static func conformers(to protocols: Set<String>) throws -> Set<String> {
        var found = Set<String>()
        for (_, text) in try sources() {
            for match in text.matches(of: /(?m)^(?:struct|final class|extension) (\w+): ([\w, ]+)\{/) {
                let conformances = match.output.2.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                if conformances.contains(where: protocols.contains) { found.insert(String(match.output.1)) }
            }
        }
        return found
    }

    /// Features registered only when their setting is on, each with it.
    static let conditional: [String: String] = [
        "RelayBinder": "a relay is configured", "SchemaWatch": "the database is guarded by its schema",
        "DemoFeature": "--demo",
    ]

    @Test func everyFeatureIsRegistered() async throws {
        let declared = try Self.conformers(to: ["Feature", "ConsolePages", "AlertPages"])
        #expect(declared.count > 25)
        try await TestSidecar.run { app in
            let registered = Set(app.sidecar.features.map { String(describing: type(of: $0)) })
            for name in declared.subtracting(registered) {
                #expect(Self.conditional[name] != nil, "\(name) is a feature that Sidecar.features never registers")
            }
            for name in Self.conditional.keys { #expect(declared.contains(name), "\(name) is no longer a feature") }
        }
    }

    /// A store that owns tables is built once, in `FeatureServices.Stores`
    /// (itself or as part of a store there), or is one of the few built where they are used (named here).
    @Test func everyStoreWithASchemaIsInTheContextsStores() async throws {
        var owners = Set<String>()
        for (_, text) in try Self.sources() {
            for match in text.matches(of: /static let schema = Schema\(\s*"(\w+)"/) { owners.insert(String(match.output.1)) }
        }
        #expect(owners.contains("AlertStore") && owners.contains("PushRegistrationStore"))
        // Built where they are used: region settings read ad hoc, the instances' leases and counts,
        // and the relay's bindings (only with a relay configured).
        let builtWhereUsed: Set<String> = ["RegionSettingsStore", "CoordinationStore", "RelayStore", "RelayBinder"]
        try await TestSidecar.run { app in
            // A store may hold another it is built with (`AlertStore.sends`).
            let stores = Mirror(reflecting: app.sidecar.context.stores).children.map(\.value)
            let parts = stores.flatMap { Mirror(reflecting: $0).children.map(\.value) }
            let inContext = Set((stores + parts).map { String(describing: type(of: $0)) })
            for owner in owners.subtracting(builtWhereUsed) {
                #expect(inContext.contains(owner), "\(owner) owns tables but is not in FeatureServices.Stores")
            }
        }
    }

    /// Every `sidecar GROUP COMMAND` a feature describes is offered.
    @Test func everyDescribedCommandIsOffered() throws {
        var described = Set<String>()
        for (_, text) in try Self.sources() {
            for match in text.matches(of: /OperatorCommand\(\s*name: "([a-z -]+)"/) { described.insert(String(match.output.1)) }
        }
        #expect(described.count > 20)
        let offered = Set(OperatorCommands.all.map(\.name))
        #expect(described.subtracting(offered).isEmpty, "described but not in OperatorCommands.all: \(described.subtracting(offered).sorted())")
    }

    /// Every table is either carried by a region's export or kept, with why.
    @Test func everyTableHasAnExportDecision() async throws {
        try await TemporaryDirectory.run("coverage") { directory in
            let database = try SQLiteDatabase(path: directory.appendingPathComponent("schema.sqlite3").path, readers: 1)
            try await database.migrate(Migrations.sidecar)
            let tables = try await database.read { connection in
                try connection.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'", []).map {
                    try $0.string("name")
                }
            }
            await database.close()
            let schema = Set(tables).subtracting(MigrationListTests.bookkeeping)
            #expect(
                schema.subtracting(RegionExchange.coverage.keys).isEmpty,
                "no export decision: \(schema.subtracting(RegionExchange.coverage.keys).sorted())")
            #expect(
                Set(RegionExchange.coverage.keys).subtracting(schema).isEmpty,
                "no such table: \(Set(RegionExchange.coverage.keys).subtracting(schema).sorted())")
        }
    }

    /// The members the coverage names are the ones an export writes.
    @Test func theExportWritesTheMembersTheCoverageNames() async throws {
        try await TestSidecar.run { app in
            let document = try await RegionExport.export(regionID: 1, database: app.sidecar.database, nowMillis: 0)
            guard case .object(let members) = document else { throw CentralListError.notAnObject }
            for case .exported(let member) in RegionExchange.coverage.values {
                let top = String(member.prefix { $0 != "[" })
                // alert_sources is written only when the region has sources.
                if top != "alert_sources" { #expect(members[top] != nil, "\(member) is not in the export") }
            }
        }
    }

    enum CentralListError: Error { case notAnObject }
}
