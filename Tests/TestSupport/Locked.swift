import Synchronization

/// A mutex-protected value in a class, so closures can share it.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
    public var value: Value { mutex.withLock { $0 } }
}
