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
            // A new minute re-stamps the feed: a new tag, so a cached copy is never older than the stamp.
            let current = try #require(changed.header("ETag"))
            app.clock.advance(seconds: 60)
            let restamped = try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": current])
            #expect(restamped.status == 200 && restamped.header("ETag") != current)
            #expect(try await app.send("GET", "/api/v1/regions/404/alerts").header("Cache-Control") == "no-store")
        }
    }

    @Test func theFeedIsStampedWithTheMinuteOfTheResponseAndLastModifiedWithItsLastChange() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let start = app.clock.now().epochMillis / 1000
            app.clock.advance(seconds: 3600 + 59)
            let response = try await app.send("GET", "/api/v1/regions/0/alerts")
            let empty = try FeedMessage(decoding: response.body)
            #expect(empty.entities.isEmpty)
            let now = app.clock.now().epochMillis / 1000
            #expect(empty.header.timestamp == UInt64(now / 60 * 60), "the Android app's now: rounded down, never ahead")
            #expect(response.header("Last-Modified") == HTTPDate.format(start), "an untouched region: the server's start")
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Gone soon", "start": AlertRouteTests.start])
            app.clock.advance(seconds: 60)
            try await app.administration.delete(id: alert.id)
            let deletedAt = app.clock.now().epochMillis / 1000
            app.clock.advance(seconds: 600)
            let emptiedResponse = try await app.send("GET", "/api/v1/regions/1/alerts")
            let emptied = try FeedMessage(decoding: emptiedResponse.body)
            #expect(emptied.entities.isEmpty)
            #expect(emptied.header.timestamp == UInt64((deletedAt + 600) / 60 * 60), "stamped now, not at the last change")
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
