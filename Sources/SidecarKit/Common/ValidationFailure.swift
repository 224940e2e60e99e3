/// A request that failed validation: answered 422 with the route's summary
/// and these human-readable messages (Rails-style full sentences).
struct ValidationFailure: Error, Equatable, Sendable {
    let messages: [String]
    init(_ messages: [String]) { self.messages = messages }
}
