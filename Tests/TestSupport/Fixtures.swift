import Foundation
import HTTPServer

/// A shared fixture that is not on disk. Its description names the full
/// path, so a test that needs it fails saying which file to fetch.
public struct MissingFixture: Error, CustomStringConvertible, Equatable {
    public let path: String
    public init(path: String) { self.path = path }
    public var description: String {
        "missing fixture \(path) (the apps' fixtures live in Tests/Fixtures; see Tests/Fixtures/SOURCES.md)"
    }
}

/// The fixtures from the shipped apps, copied into the repository with their
/// sources and licence (Tests/Fixtures/SOURCES.md), so a fresh clone tests alone.
public enum SharedFixtures {
    public static var directory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    /// Bytes of `relativePath` under Tests/Fixtures (e.g. `ios/regions-v3.json`);
    /// throws `MissingFixture` naming the full path when the file is absent.
    public static func bytes(_ relativePath: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: try requirePath(relativePath))))
    }

    /// The full path of `relativePath` under Tests/Fixtures, whether or not
    /// the file is there.
    public static func path(_ relativePath: String) -> String {
        directory.appendingPathComponent(relativePath).path
    }

    /// The full path of a fixture the test needs (one it hands to the server
    /// or a command to read); throws `MissingFixture` when it is absent.
    public static func requirePath(_ relativePath: String) throws -> String {
        let full = path(relativePath)
        guard FileManager.default.fileExists(atPath: full) else { throw MissingFixture(path: full) }
        return full
    }
}

/// The fixtures a fake server serves, read once when the fake is built: a
/// missing file fails the test there (`MissingFixture`, naming its path)
/// rather than being served as an empty body.
public struct LoadedFixtures: Sendable {
    private let files: [String: [UInt8]]

    public init(_ relativePaths: [String]) throws {
        var files: [String: [UInt8]] = [:]
        for path in relativePaths { files[path] = try SharedFixtures.bytes(path) }
        self.files = files
    }

    public func bytes(_ relativePath: String) -> [UInt8]? { files[relativePath] }

    /// 200 with the fixture's bytes, or, for a file the fake was not built
    /// with, a 500 whose body names the missing path (never an empty 200).
    public func response(_ relativePath: String, contentType: String = "application/json") -> Response {
        guard let bytes = files[relativePath] else {
            return .json(500, ["error": MissingFixture(path: SharedFixtures.path(relativePath)).description])
        }
        return .bytes(200, contentType: contentType, bytes)
    }
}
