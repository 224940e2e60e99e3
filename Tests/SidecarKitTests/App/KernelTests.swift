import Foundation
import Testing

@testable import SidecarKit

/// The kernel (`Kernel/`) is what every feature builds on; it names no
/// feature and nothing of the composition root, so a feature can be read,
/// moved or removed without touching it.
@Suite("App: the kernel names no feature")
struct KernelTests {
    /// The names of the types the server module declares, by folder.
    static func declaredTypes() throws -> [(folder: String, name: String)] {
        var found: [(String, String)] = []
        for (path, text) in try CentralListTests.sources() {
            let folder = path.components(separatedBy: "/Sources/SidecarKit/").last?.components(separatedBy: "/").first ?? ""
            for match in text.matches(of: /(?m)^(?:public |private |fileprivate )?(?:struct|final class|class|enum|protocol|actor|typealias) (\w+)/) {
                found.append((folder, String(match.output.1)))
            }
        }
        return found
    }

    /// A kernel file's code with its comments and string literals removed,
    /// so prose may mention what the code must not.
    static func code(_ text: String) -> String {
        text.replacing(/\/\/[^\n]*/, with: "").replacing(/"[^"\n]*"/, with: "\"\"")
    }

    @Test func kernelFilesNameOnlyKernelTypes() throws {
        let types = try Self.declaredTypes()
        #expect(types.contains { $0.folder == "Kernel" && $0.name == "KernelContext" })
        let outside = Set(types.filter { $0.folder != "Kernel" }.map(\.name))
        let kernelFiles = try CentralListTests.sources().filter { $0.path.contains("/Sources/SidecarKit/Kernel/") }
        #expect(kernelFiles.count >= 6)
        for (path, text) in kernelFiles {
            let words = Set(Self.code(text).matches(of: /\b[A-Z]\w+\b/).map { String($0.output) })
            let named = words.intersection(outside).sorted()
            #expect(named.isEmpty, "\(URL(fileURLWithPath: path).lastPathComponent) names \(named.joined(separator: ", ")), declared outside Kernel/")
        }
    }
}
