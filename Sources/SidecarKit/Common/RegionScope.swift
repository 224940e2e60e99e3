import HTTPServer

extension RegionDirectory {
    /// The region named by the request's `:region` path segment, if served.
    func resolve(_ request: Request) -> Region? {
        request.pathParameters["region"].flatMap { region(pathSegment: $0) }
    }
}

extension Response {
    /// Spec §1.2: the answer for a region this sidecar does not serve.
    static var regionNotFound: Response { .json(404, ["error": "Couldn't find Region"]) }

    /// A storage failure: the write did not happen, so never a 2xx; 503 with
    /// Retry-After tells clients to try again later.
    static func storageUnavailable(_ style: ErrorStyle, summary: String) -> Response {
        style.response(status: 503, error: summary, messages: ["Storage is temporarily unavailable; try again"])
            .adding(header: "Retry-After", "5")
    }
}
