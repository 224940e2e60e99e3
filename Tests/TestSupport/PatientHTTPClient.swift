import HTTPClient

extension HTTPClient {
    /// The longest a test's request may take before it fails: only a hang.
    /// On a busy two-core machine a local peer's answer can wait many
    /// seconds behind the other suites, far past the client's 10 s default.
    public static let patientTimeoutSeconds = 300

    /// A client for tests whose subject is not a timeout: its limit only
    /// catches a hang.
    public static func patient() -> HTTPClient { HTTPClient(timeoutSeconds: patientTimeoutSeconds) }
}
