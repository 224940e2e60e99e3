import Foundation

/// The queue's transport on top of the API.
public struct SidecarRegistrationTransport: RegistrationTransport {
    let make: @Sendable (RegistrationPolicy.Registration) -> SidecarAPI

    /// `make` builds the API for a registration's sidecar and region.
    public init(
        make: @escaping @Sendable (RegistrationPolicy.Registration) -> SidecarAPI = { SidecarAPI(baseURL: $0.sidecarURL, regionID: $0.regionID) }
    ) {
        self.make = make
    }

    public func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        await answer { () async throws(SidecarAPI.Failure) in try await make(registration).register(registration) }
    }

    public func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        await answer { () async throws(SidecarAPI.Failure) in try await make(registration).unregister(token: registration.token) }
    }

    func answer(_ call: () async throws(SidecarAPI.Failure) -> Void) async -> (status: Int?, retryAfter: String?) {
        do {
            try await call()
            return (204, nil)
        } catch {
            switch error {
            case .transport: return (nil, nil)
            case .unknownRegion, .notFound: return (404, nil)
            case .invalid, .alreadyReported: return (422, nil)
            case .throttled(let after): return (429, after.map { String(Int($0)) })
            case .weatherHidden: return (403, nil)
            case .unexpected(let status) where (200..<300).contains(status): return (nil, nil)  // a success in name only: not a registration
            case .upstream(let status), .unexpected(let status): return (status, nil)
            case .undecodable: return (nil, nil)
            }
        }
    }
}
