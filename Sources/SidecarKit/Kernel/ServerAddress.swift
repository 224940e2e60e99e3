import Synchronization

/// The port the server bound (nil before it listens), so background work
/// can recognise a URL that points back at this server.
final class BoundPort: Sendable {
    private let value = Mutex<Int?>(nil)
    func set(_ port: Int) { value.withLock { $0 = port } }
    var port: Int? { value.withLock { $0 } }
}

/// The public base URL (`--public-url`, or one built from the bound port).
final class PublicBaseURL: Sendable {
    private let value: Mutex<String>
    init(_ initial: String) { value = Mutex(initial) }
    func set(_ url: String) { value.withLock { $0 = url } }
    var url: String { value.withLock { $0 } }
}
