import CZlib
import Foundation
import GTFSRealtime
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// Conditional GETs, a tag per variant, and the stamp and Last-Modified
/// times the apps and caches read.
@Suite("Alerts: a feed caches can hold")
struct AlertFeedCachingTests {
    @Test func conditionalGetsAnswer304AndEachVariantHasItsOwnTag() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Detour", "start": AlertRouteTests.start])
            _ = try await app.administration.setPublished(id: alert.id, true)
            let first = try await app.send("GET", "/api/v1/regions/1/alerts")
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("\"1-p-") && etag.hasSuffix("\""))
            #expect(first.header("Cache-Control") == "public, max-age=60, stale-if-error=600")
            let lastModified = try #require(first.header("Last-Modified"))
            #expect(HTTPDate.parse(lastModified) != nil)

            for (header, value, status) in [
                ("If-None-Match", etag, 304), ("If-None-Match", "*", 304), ("If-None-Match", "\"nope\", \(etag)", 304),
                ("If-None-Match", "W/\(etag)", 304), ("If-None-Match", "\"nope\"", 200),
                ("If-None-Match", String(repeating: "garbage,\"", count: 900), 200), ("If-None-Match", "", 200),
                ("If-Modified-Since", lastModified, 304), ("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT", 200),
                ("If-Modified-Since", "yesterday", 200),
            ] {
                let response = try await app.send("GET", "/api/v1/regions/1/alerts", headers: [header: value])
                #expect(response.status == status, "\(header): \(value.prefix(40))")
                if status == 304 {
                    #expect(response.body.isEmpty && response.header("ETag") == etag)
                    #expect(response.header("Cache-Control") == AlertFeedRoutes.cacheControl)
                }
            }
            // The 304's raw bytes: no `Content-Length: 0` (RFC 9110 §8.6), only
            // the length the 200 had, and no body.
            let socket = try RawSocket(port: app.port)
            #expect(
                socket.send(
                    RawHTTPClient.request("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": etag])))
            let raw = String(decoding: await socket.readOffPool(timeoutSeconds: 60).bytes, as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 304"), "\(raw)")
            let lengths = raw.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("content-length:") }
            #expect(lengths == ["Content-Length: \(first.body.count)"], "\(raw)")
            #expect(raw.hasSuffix("\r\n\r\n"), "no body after the head")
            // If-None-Match wins over If-Modified-Since.
            #expect(
                try await app.send(
                    "GET", "/api/v1/regions/1/alerts",
                    headers: [
                        "If-None-Match": "\"nope\"",
                        "If-Modified-Since": lastModified,
                    ]
                ).status == 200)

            // Every variant has its own tag; the text form too.
            let tags = try await [
                "/api/v1/regions/1/alerts?test=1", "/api/v1/regions/0/alerts", "/api/v1/regions/1/alerts.pbtext",
            ].asyncMap { try await app.send("GET", $0).header("ETag") ?? "" }
            #expect(Set(tags + [etag]).count == 4, "\(tags)")
            #expect(try await app.send("GET", "/api/v1/regions/1/alerts.pbtext", headers: ["If-None-Match": tags[2]]).status == 304)

            // A change: a new tag at once, and the old one no longer matches.
            _ = try await app.administration.edit(id: alert.id, fields: ["header": "Detour all weekend"])
            let changed = try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": etag])
            #expect(changed.status == 200 && changed.header("ETag") != etag)
            // Unchanged, a feed keeps its bytes and its tag: a client revalidating after max-age gets 304.
            let current = try #require(changed.header("ETag"))
            app.clock.advance(seconds: 600)
            let revalidated = try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": current])
            #expect(revalidated.status == 304, "no change, no new tag")
            #expect(revalidated.header("Vary") == "Accept-Encoding")
            #expect(try await app.send("GET", "/api/v1/regions/404/alerts").header("Cache-Control") == "no-store")
        }
    }

    /// Both apps' HTTP stacks ask for gzip (OneBusAway/onebusaway-ios
    /// APIService+GetData.swift:69; Android's HttpURLConnection by default).
    @Test func gzipForClientsThatAskWithItsOwnTag() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let alert = try await app.administration.create(
                regionID: 1,
                fields: ["header": "Detour", "description": String(repeating: "Buses skip 45th St. ", count: 50), "start": AlertRouteTests.start])
            _ = try await app.administration.setPublished(id: alert.id, true)
            let plain = try await app.send("GET", "/api/v1/regions/1/alerts")
            let zipped = try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["Accept-Encoding": "gzip, deflate"])
            #expect(plain.header("Content-Encoding") == nil && zipped.header("Content-Encoding") == "gzip")
            #expect(zipped.body.count < plain.body.count / 3, "\(zipped.body.count) of \(plain.body.count) bytes")
            #expect(try gunzip(zipped.body) == plain.body)
            let (plainTag, zippedTag) = (try #require(plain.header("ETag")), try #require(zipped.header("ETag")))
            #expect(zippedTag != plainTag && zippedTag.hasSuffix("-gz\"") && zipped.header("Vary") == "Accept-Encoding")
            #expect(
                try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["Accept-Encoding": "gzip", "If-None-Match": zippedTag]).status == 304)
            #expect(
                try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["Accept-Encoding": "gzip", "If-None-Match": plainTag]).status == 200)
            #expect(try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": plainTag]).status == 304)
            #expect(try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["Accept-Encoding": "gzip;q=0"]).header("Content-Encoding") == nil)
        }
    }

    /// zlib's inflate, reading the gzip wrapper (windowBits 15 + 16).
    func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw GzipFailure() }
        defer { inflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: 1 << 22)
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target -> Int32 in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw GzipFailure() }
        return Array(output.prefix(Int(stream.total_out)))
    }

    struct GzipFailure: Error {}

    @Test func theFeedIsStampedWithItsLastChangeAndLastModifiedToo() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let start = app.clock.now().epochMillis / 1000
            app.clock.advance(seconds: 3600 + 59)
            let response = try await app.send("GET", "/api/v1/regions/0/alerts")
            let empty = try FeedMessage(decoding: response.body)
            #expect(empty.entities.isEmpty)
            #expect(empty.header.timestamp == UInt64(start), "an untouched region: the server's start")
            #expect(response.header("Last-Modified") == HTTPDate.format(start))
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Gone soon", "start": AlertRouteTests.start])
            app.clock.advance(seconds: 60)
            try await app.administration.delete(id: alert.id)
            let deletedAt = app.clock.now().epochMillis / 1000
            app.clock.advance(seconds: 600)
            let emptiedResponse = try await app.send("GET", "/api/v1/regions/1/alerts")
            let emptied = try FeedMessage(decoding: emptiedResponse.body)
            #expect(emptied.entities.isEmpty)
            #expect(emptied.header.timestamp == UInt64(deletedAt), "stamped at the change: the same bytes until the next one")
            #expect(emptiedResponse.header("Last-Modified") == HTTPDate.format(deletedAt), "the time its content last changed")
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
