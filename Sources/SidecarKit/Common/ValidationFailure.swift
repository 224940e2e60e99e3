/// A request that failed validation: answered 422 with the route's summary
/// and these human-readable messages (Rails-style full sentences).
public struct ValidationFailure: Error, Equatable, Sendable {
    public let messages: [String]
    public init(_ messages: [String]) { self.messages = messages }
}
