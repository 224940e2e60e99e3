import HTTPServer

/// This server's own OpenAPI description, served at `GET /openapi.yaml`.
/// CI checks it covers every operation and schema of the shared contract
/// (Tests/Fixtures/spec/openapi.yaml) with compatible shapes, and runs schemathesis
/// against the contract; a test checks the document and the router list the
/// same operations (the console's HTML pages apart).
enum OpenAPIDocument {
    static var routes: [Route] {
        let body = PackageResources.openapi_yaml
        return [
            Route(
                "GET", "/openapi.yaml", parsesParameters: false,
                immediate: { _ in
                    .bytes(200, contentType: "application/yaml; charset=utf-8", body)
                }
            ) { _ in .bytes(200, contentType: "application/yaml; charset=utf-8", body) }
        ]
    }

    /// The document, a YAML file embedded in the binary at build time
    /// (`Resources/openapi.yaml`).
    static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
}

/// `GET /openapi.yaml`: this server's contract, as a feature.
struct OpenAPIRoutes: Feature {
    var routes: [Route] { OpenAPIDocument.routes }
}
