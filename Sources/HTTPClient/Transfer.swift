import CCurl
import FoundationEssentials

/// One transfer: its easy handle, buffers and the caller's continuation.
final class Transfer: @unchecked Sendable {
    // Built by the caller, then owned by the driver thread alone.
    let request: HTTPClientRequest
    let configuration: HTTPClient.Configuration
    let continuation: CheckedContinuation<HTTPClientResponse, any Error>
    var handle: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var responseBody: [UInt8] = []
    var responseHeaders: [(name: String, value: String)] = []
    var overflowed = false
    /// The address `refuseAddress` refused, if it did.
    var refusedAddress: String?
    var requestBody: [UInt8]
    var maxBodyBytes: Int { request.maxBodyBytes ?? configuration.maxBodyBytes }

    init(
        request: HTTPClientRequest, configuration: HTTPClient.Configuration,
        continuation: CheckedContinuation<HTTPClientResponse, any Error>
    ) {
        self.request = request
        self.configuration = configuration
        self.continuation = continuation
        self.requestBody = request.body
    }

    /// Creates and configures the easy handle.
    func prepare() -> Bool {
        guard let handle = curl_easy_init() else { return false }
        self.handle = handle
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = sidecar_curl_setopt_string(handle, CURLOPT_URL, request.url)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_TIMEOUT, request.timeoutSeconds ?? configuration.timeoutSeconds)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, configuration.connectTimeoutSeconds)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = sidecar_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        _ = sidecar_curl_setopt_string(handle, CURLOPT_USERAGENT, configuration.userAgent)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_PRIVATE, context)
        _ = sidecar_curl_setopt_write(handle, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = sidecar_curl_setopt_write(handle, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        switch request.proxy {
        case .environment: break
        // An empty string turns every proxy off, the environment's included.
        case .none: _ = sidecar_curl_setopt_string(handle, CURLOPT_PROXY, "")
        case .through(let proxy): _ = sidecar_curl_setopt_string(handle, CURLOPT_PROXY, proxy)
        }
        if request.refuseAddress != nil {
            _ = sidecar_curl_setopt_prereq(handle, curlCheckAddress)
            _ = sidecar_curl_setopt_pointer(handle, CURLOPT_PREREQDATA, context)
        }
        if configuration.http2 {
            _ = sidecar_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            _ = sidecar_curl_setopt_long(handle, CURLOPT_PIPEWAIT, 1)
        }
        if let caFile = configuration.caFile { _ = sidecar_curl_setopt_string(handle, CURLOPT_CAINFO, caFile) }
        switch request.method {
        case "GET": break
        case "POST":
            _ = sidecar_curl_setopt_long(handle, CURLOPT_POST, 1)
        default:
            _ = sidecar_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        }
        if request.method != "GET" {
            requestBody.withUnsafeBufferPointer { buffer in
                // COPYPOSTFIELDS copies, so the buffer need not outlive the call.
                _ = sidecar_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(buffer.count))
                _ = sidecar_curl_setopt_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS,
                    UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!))
            }
        }
        for (name, value) in request.headers { headerList = curl_slist_append(headerList, "\(name): \(value)") }
        if request.method != "GET" && !request.headers.contains(where: { $0.name.lowercased() == "expect" }) {
            headerList = curl_slist_append(headerList, "Expect:")
        }
        if let headerList { _ = sidecar_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, headerList) }
        return true
    }

    func finish(_ code: CURLcode) {
        defer { cleanup() }
        if overflowed {
            continuation.resume(throwing: HTTPClientError.bodyTooLarge(limit: maxBodyBytes))
            return
        }
        if let refusedAddress {
            continuation.resume(throwing: HTTPClientError.refusedAddress(refusedAddress))
            return
        }
        guard code == CURLE_OK, let handle else {
            continuation.resume(throwing: HTTPClientError.transport(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code))))
            return
        }
        var status = 0
        _ = sidecar_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        continuation.resume(returning: HTTPClientResponse(status: status, body: responseBody, headers: responseHeaders))
    }

    func fail(_ error: any Error) {
        cleanup()
        continuation.resume(throwing: error)
    }

    private func cleanup() {
        if let handle { curl_easy_cleanup(handle) }
        handle = nil
        curl_slist_free_all(headerList)
        headerList = nil
    }
}

func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if transfer.responseBody.count + length > transfer.maxBodyBytes {
        transfer.overflowed = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
        transfer.responseBody.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    return length
}

func curlCheckAddress(
    _ context: UnsafeMutableRawPointer?, _ primaryIP: UnsafeMutablePointer<CChar>?, _ localIP: UnsafeMutablePointer<CChar>?,
    _ primaryPort: Int32, _ localPort: Int32
) -> Int32 {
    guard let context, let primaryIP else { return 1 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let address = String(cString: primaryIP)
    guard let refuse = transfer.request.refuseAddress, refuse(address, Int(primaryPort)) else { return 0 }  // CURL_PREREQFUNC_OK
    transfer.refusedAddress = address
    return 1  // CURL_PREREQFUNC_ABORT
}

func curlWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        transfer.responseHeaders.removeAll()  // a new response (redirect, 100-continue)
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        var value = Substring(line[line.index(after: colon)...])
        while let first = value.first, first == " " || first == "\t" { value = value.dropFirst() }
        while let last = value.last, last.isWhitespace { value = value.dropLast() }  // "\r\n" is one Character
        transfer.responseHeaders.append((name, String(value)))
    }
    return length
}
