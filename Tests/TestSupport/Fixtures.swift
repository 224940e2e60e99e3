import Foundation

/// The shared fixtures from the shipped apps (../shared/fixtures beside the
/// checkout, as on developer machines and in CI).
public enum SharedFixtures {
    public static var directory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/fixtures")
    }

    /// Bytes of `relativePath` under shared/fixtures (e.g. `ios/regions-v3.json`).
    public static func bytes(_ relativePath: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(relativePath)))
    }

    public static func path(_ relativePath: String) -> String {
        directory.appendingPathComponent(relativePath).path
    }
}
