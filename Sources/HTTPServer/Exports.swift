// Logger and JSONValue live in Core so that modules without an HTTP server
// (Push, OBA) can use them; HTTPServer's users get them with it.
@_exported import Core
