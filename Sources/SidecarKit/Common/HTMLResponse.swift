import HTML
import HTTPServer

/// A rendered page as a response, with a page family's security headers
/// (the console's and the share pages' differ in what they allow).
enum HTMLResponse {
    static func page(_ status: Int, _ page: HTML, headers: [(String, String)]) -> Response {
        var response = Response.bytes(status, contentType: "text/html; charset=utf-8", Array(page.rendered.utf8))
        for (name, value) in headers { response = response.adding(header: name, value) }
        return response
    }
}
