import Foundation
import TestSupport
import Testing

@testable import GTFSRealtime

@Suite("GTFS-realtime protobuf")
struct GTFSRealtimeTests {
    @Test func decodesTheSidecarFeedTheIOSAppReads() throws {
        let feed = try FeedMessage(decoding: try SharedFixtures.bytes("ios/puget_sound_alerts.pb"))
        #expect(feed.header.gtfsRealtimeVersion == "1.0")
        #expect(feed.header.timestamp == 1_539_351_391)
        #expect(feed.entities.count == 20)
        let first = try #require(feed.entities.first)
        #expect(first.id == "AlertFeedItem_4561")
        let alert = try #require(first.alert)
        #expect(alert.activePeriods == [TimeRange(start: 1_539_097_260, end: 1_539_126_060)])
        #expect(alert.informedEntities == [EntitySelector(agencyID: "40")])
        #expect(alert.cause == .unknownCause)
        #expect(alert.effect == .unknownEffect)
        #expect(alert.url?.translations.first == .init(text: "https://m.soundtransit.org/node/19133", language: "en"))
        #expect(alert.headerText?.translations.first?.text.hasPrefix("Sounder Lakewood-Seattle") == true)
        // Our encoding of what we decoded decodes to the same message.
        #expect(try FeedMessage(decoding: feed.encoded()) == feed)
    }

    @Test func roundTripsEveryField() throws {
        let feed = FeedMessage(
            header: FeedHeader(timestamp: 1_800_000_000),
            entities: [
                FeedEntity(
                    id: "Alert_7",
                    alert: Alert(
                        activePeriods: [TimeRange(start: 1_800_000_000, end: 1_800_028_800)], informedEntities: [EntitySelector(agencyID: "1")],
                        cause: .construction, effect: .detour,
                        url: TranslatedString([.init(text: "https://example.org/44", language: "en")]),
                        headerText: TranslatedString([
                            .init(text: "Route 44 detoured", language: "en"), .init(text: "Ruta 44 desviada", language: "es"),
                        ]),
                        descriptionText: TranslatedString([.init(text: "Über 🚌 \"quotes\"\n", language: "en")]), severityLevel: .warning))
            ])
        let bytes = feed.encoded()
        #expect(try FeedMessage(decoding: bytes) == feed)
        let json = feed.jsonText()
        #expect(json.contains("\"gtfsRealtimeVersion\": \"1.0\""))
        #expect(json.contains("\"cause\": \"CONSTRUCTION\""))
        #expect(json.contains("\"severityLevel\": \"WARNING\""))
        #expect(json.contains("\"start\": \"1800000000\""))
        #expect(json.contains(#"Über 🚌 \"quotes\"\n"#))
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect((parsed?["entity"] as? [[String: Any]])?.first?["id"] as? String == "Alert_7")
    }

    @Test func anEmptyFeedStillHasAHeader() throws {
        let bytes = FeedMessage(header: FeedHeader(timestamp: nil), entities: []).encoded()
        #expect(!bytes.isEmpty)
        #expect(try FeedMessage(decoding: bytes).entities.isEmpty)
    }

    @Test(
        "malformed input is an error, not a crash",
        arguments: [
            [UInt8](), [0x0A], [0x0A, 0x05, 0x0A], [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], [0x03, 0x00],
            [0x0A, 0x02, 0x0A, 0x80],
        ])
    func malformed(bytes: [UInt8]) {
        #expect(throws: ProtobufError.self) { try FeedMessage(decoding: bytes) }
    }

    @Test func informedEntitiesKeepEverySelectorField() throws {
        let selectors = [
            EntitySelector(agencyID: "1"), EntitySelector(routeID: "44", routeType: 3),
            EntitySelector(
                trip: TripDescriptor(tripID: "t-9", routeID: "44", directionID: 1, startTime: "25:10:00", startDate: "20261201")),
            EntitySelector(routeID: "44", stopID: "1_75403", directionID: 0), EntitySelector(routeType: -1),
        ]
        let feed = FeedMessage(
            header: FeedHeader(timestamp: 1), entities: [FeedEntity(id: "a", alert: Alert(informedEntities: selectors))])
        #expect(try FeedMessage(decoding: feed.encoded()).entities.first?.alert?.informedEntities == selectors)
        let json = feed.jsonText()
        #expect(json.contains(#""routeType": 3"#))
        #expect(json.contains(#""startTime": "25:10:00""#))
        #expect(json.contains(#""directionId": 1"#))
    }

    @Test func aLenientDecodeLeavesOutOnlyTheBrokenEntity() throws {
        let good = FeedEntity(id: "good", alert: Alert(headerText: TranslatedString([.init(text: "Fine", language: nil)])))
        let broken = FeedEntity(id: "broken", alert: Alert(headerText: TranslatedString([.init(text: "XXXX", language: nil)])))
        var bytes = FeedMessage(header: FeedHeader(timestamp: 1), entities: [broken, good]).encoded()
        // Invalid UTF-8 in the broken alert's header text.
        let marker = Array("XXXX".utf8)
        let at = try #require((0...(bytes.count - marker.count)).first { Array(bytes[$0..<$0 + marker.count]) == marker })
        bytes[at] = 0xC3
        bytes[at + 1] = 0x28
        #expect(throws: ProtobufError.self) { try FeedMessage(decoding: bytes) }
        let (message, rejected) = try FeedMessage.decodingEntities(bytes)
        #expect(message.entities == [good])
        #expect(rejected == [RejectedEntity(index: 0, id: "broken", reason: "a string that is not valid UTF-8")])
        // Broken framing still fails as a whole.
        #expect(throws: ProtobufError.self) { try FeedMessage.decodingEntities(Array(bytes.prefix(bytes.count - 3))) }
    }

    @Test func enumNames() {
        #expect(Cause(name: "construction") == .construction)
        #expect(Effect(name: "DETOUR")?.rawValue == 4)
        #expect(SeverityLevel(name: "severe") == .severe)
        #expect(Cause(name: "ALIENS") == nil)
        #expect(Effect.allCases.map(\.name).contains("ACCESSIBILITY_ISSUE"))
    }
}
