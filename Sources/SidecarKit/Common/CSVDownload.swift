import HTTPServer

/// A CSV file sent while it is written (`Response.streamed`): the producer
/// reads a page of rows at a time and waits whenever the client is slower,
/// so a million rows never sit in memory. A failure mid-way cuts the body
/// short, which the client sees as an incomplete download, never as a
/// complete file with rows missing.
enum CSVDownload {
    static func response(filename: String, _ produce: @escaping @Sendable ((String) async throws -> Void) async throws -> Void) -> Response {
        Response.streamed(200, contentType: "text/csv; charset=utf-8") { writer in
            try await produce { chunk in try await writer.write(Array(chunk.utf8)) }
        }
        .adding(header: "Content-Disposition", "attachment; filename=\"\(filename)\"")
        .adding(header: "Cache-Control", "no-store").adding(header: "X-Content-Type-Options", "nosniff")
    }
}
