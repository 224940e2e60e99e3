import Foundation
import SidecarClient
import Testing

/// Issue 18 (first part): the library's pure rules, table by table.
@Suite("SidecarClient links")
struct SidecarLinkTests {
    static let base = URL(string: "https://onebusaway.co")!

    @Test(arguments: [
        // The seed's own examples, and the quirks it records.
        (
            "https://onebusaway.co/regions/1/stops/1_75403/trips?trip_id=1_1234&service_date=1698307200.0&stop_sequence=5",
            SidecarLink.trip(.init(regionID: 1, stopID: "1_75403", tripID: "1_1234", serviceDate: 1_698_307_200_000, stopSequence: 5))
        ),
        (
            "https://elsewhere.example/foo/REGIONS/1/Stops/2/TRIPS/bar?trip_id=t&service_date=1&stop_sequence=0",
            SidecarLink.trip(.init(regionID: 1, stopID: "2", tripID: "t", serviceDate: 1000, stopSequence: 0))
        ),
        ("onebusaway://view-stop?stopID=1_75403&regionID=1", SidecarLink.viewStop(stopID: "1_75403", regionID: 1)),
        ("kiedybus://view-stop?stopID=&regionID=3", SidecarLink.viewStop(stopID: "", regionID: 3)),
        ("https://onebusaway.co/regions/1/stops/1_75403", SidecarLink.stop(regionID: 1, stopID: "1_75403")),
    ])
    func decodesAsTheAppsDo(text: String, expected: SidecarLink) throws {
        #expect(SidecarLink(url: try #require(URL(string: text))) == expected)
    }

    @Test(arguments: [
        "onebusaway://view-stop?regionID=1", "onebusaway://view-stop?stopID=1&regionID=one", "onebusaway://other?x=1",
        "https://onebusaway.co/regions/x/stops/2/trips?trip_id=t&service_date=1&stop_sequence=0",
        "https://onebusaway.co/regions/1/stops/2/trips?trip_id=t&stop_sequence=0",
        "onebusaway://add-region?oba-url=https%3A%2F%2Foba.example.com", "onebusaway://add-region?name=X&oba-url=oba.example.com",
        "onebusaway://add-region?name=X&oba-url=not%20a%20url",
    ])
    func dropsWhatTheAppsDrop(text: String) throws {
        #expect(SidecarLink(url: try #require(URL(string: text))) == nil)
    }

    @Test func addRegionValuesSurviveAndUmamiIsBothOrNothing() throws {
        let region = SidecarLink.AddRegion(
            name: "Région #1 & co", obaURL: URL(string: "https://oba.example.com/api?key=a&b=c")!,
            sidecarURL: URL(string: "https://obaco.example.com/api?a=1&b=2")!,
            umamiURL: URL(string: "https://umami.example.com")!)
        let url = try #require(SidecarLink.addRegion(region).url())
        #expect(url.absoluteString.contains("sidecar-url=https%3A%2F%2Fobaco.example.com%2Fapi%3Fa%3D1%26b%3D2"))
        guard case .addRegion(let decoded)? = SidecarLink(url: url) else {
            Issue.record("not decoded")
            return
        }
        #expect(decoded == region)
        #expect(decoded.umami == nil, "a URL without an id configures no analytics")
        var both = region
        both.umamiID = "abc"
        guard case .addRegion(let withID)? = SidecarLink(url: try #require(SidecarLink.addRegion(both).url())) else { return }
        #expect(withID.umami?.id == "abc")
        let relative = try #require(URL(string: "onebusaway://add-region?name=T&oba-url=%2Fapi%2Foba&otp-url=bare.host"))
        guard case .addRegion(let pathOnly)? = SidecarLink(url: relative) else {
            Issue.record("a bare path is valid")
            return
        }
        #expect(pathOnly.otpURL == nil, "an invalid optional URL degrades to nil")
    }

    @Test func tripAndStopLinksRoundTrip() throws {
        let trip = SidecarLink.TripLink(
            regionID: 1, stopID: "1_75403", tripID: "1_18198857&x", serviceDate: 1_343_545_200_000, stopSequence: 41,
            vehicleID: "1_3618")
        let url = try #require(SidecarLink.trip(trip).url(sidecarBaseURL: Self.base))
        #expect(
            url.absoluteString
                == "https://onebusaway.co/regions/1/stops/1_75403/trips?trip_id=1_18198857%26x&service_date=1343545200.0&stop_sequence=41&vehicle_id=1_3618"
        )
        #expect(SidecarLink(url: url) == .trip(trip))
        #expect(SidecarLink.trip(trip).url() == nil, "no sidecar, no web link")
        let stop = try #require(SidecarLink.stop(regionID: 1, stopID: "1 75403").url(sidecarBaseURL: Self.base))
        #expect(SidecarLink(url: stop) == .stop(regionID: 1, stopID: "1 75403"))
        #expect(
            SidecarLink.viewStop(stopID: "1_75403&evil=1", regionID: 1).url()?.absoluteString
                == "onebusaway://view-stop?stopID=1_75403%26evil%3D1&regionID=1")
    }
}

@Suite("SidecarClient push payloads")
struct SidecarPushTests {
    static var alarm: [String: Any] {
        [
            "trip_id": "1_604670535", "stop_id": "1_75403", "region_id": 1, "vehicle_id": "1_4361",
            "service_date": 1_752_624_000_000, "stop_sequence": 3,
        ]
    }
    static let body = SidecarPush.AlarmPushBody(
        regionID: 1, stopID: "1_75403", tripID: "1_604670535", serviceDate: 1_752_624_000_000,
        vehicleID: "1_4361", stopSequence: 3)

    @Test func exactlyOneKeyBesidesApsDecides() throws {
        let aps: [String: Any] = ["alert": ["body": "Your bus arrives in 10 minutes"]]
        #expect(SidecarPush(userInfo: ["aps": aps, "arrival_and_departure": Self.alarm]) == .alarm(Self.body), "iOS, with aps")
        #expect(SidecarPush(userInfo: ["arrival_and_departure": Self.alarm]) == .alarm(Self.body), "pre-stripped")
        let android = String(decoding: try JSONSerialization.data(withJSONObject: Self.alarm), as: UTF8.self)
        #expect(SidecarPush(userInfo: ["arrival_and_departure": android]) == .alarm(Self.body), "Android: a JSON string")
        #expect(SidecarPush(userInfo: ["aps": aps, "donation": "test-7"]) == .donation(testID: "test-7"))
        #expect(SidecarPush(userInfo: ["aps": ["alert": ["title": "Route 44", "body": "Detoured"]]]) == .alert(title: "Route 44", body: "Detoured"))
        #expect(SidecarPush(userInfo: ["aps": aps, "arrival_and_departure": Self.alarm, "donation": "x"]) == .unknown, "two keys")
        #expect(SidecarPush(userInfo: ["aps": aps, "arrival_and_departure": ["trip_id": "t"]]) == .unknown, "malformed alarm")
        #expect(SidecarPush(userInfo: ["aps": aps, "something_new": 1]) == .unknown)
    }

    @Test func androidDataMapsAndNotifications() throws {
        let android = String(decoding: try JSONSerialization.data(withJSONObject: Self.alarm), as: UTF8.self)
        let body: AlarmPushBody = Self.body
        #expect(SidecarPush(data: ["arrival_and_departure": android], notificationBody: "Your bus arrives in 10 minutes") == .alarm(body))
        #expect(SidecarPush(data: [:], notificationTitle: "Route 44", notificationBody: "Detoured") == .alert(title: "Route 44", body: "Detoured"))
        #expect(SidecarPush(data: [:]) == .unknown, "nothing to show")
        #expect(SidecarPush(data: ["arrival_and_departure": "{not json"]) == .unknown)
        #expect(SidecarPush(data: ["donation": "", "arrival_and_departure": android]) == .unknown, "two keys")
    }
}

@Suite("SidecarClient registration policy")
struct RegistrationPolicyTests {
    typealias Inputs = RegistrationPolicy.Inputs
    static let url = URL(string: "https://onebusaway.co")!
    static let ready = Inputs(authorization: .authorized, deviceToken: "01abff", regionID: 1, sidecarURL: url, clientRegionID: 1, locale: "es-MX")

    static func with(_ change: (inout Inputs) -> Void) -> Inputs {
        var inputs = ready
        change(&inputs)
        return inputs
    }

    @Test func desiredStateFromObservableInputsOnly() {
        guard case .wanted(let registration) = RegistrationPolicy.desired(Self.ready) else {
            Issue.record("not wanted")
            return
        }
        #expect(registration.token == "01abff" && registration.locale == "es-MX" && !registration.testDevice && registration.description == nil)
        #expect(RegistrationPolicy.desired(Self.with { $0.authorization = .notDetermined }) == .unresolved)
        #expect(RegistrationPolicy.desired(Self.with { $0.authorization = .denied }) == .optedOut)
        for quiet in [Inputs.Authorization.provisional, .ephemeral] {
            guard case .wanted = RegistrationPolicy.desired(Self.with { $0.authorization = quiet }) else {
                Issue.record("\(quiet) counts as granted")
                continue
            }
        }
        #expect(RegistrationPolicy.desired(Self.with { $0.deviceToken = nil }) == .unresolved)
        #expect(RegistrationPolicy.desired(Self.with { $0.sidecarURL = nil }) == .noSidecar)
        #expect(RegistrationPolicy.desired(Self.with { $0.clientRegionID = 0 }) == .unresolved, "stale-region guard")
    }

    @Test(arguments: [(true, "Aaron's iPhone", true), (true, "  ", false), (true, nil, false), (false, "Named", false)] as [(Bool, String?, Bool)])
    func testDeviceDowngrade(wants: Bool, name: String?, testDevice: Bool) {
        guard
            case .wanted(let registration) = RegistrationPolicy.desired(
                Self.with {
                    $0.wantsTestDevice = wants
                    $0.testDeviceName = name
                })
        else {
            Issue.record("not wanted")
            return
        }
        #expect(registration.testDevice == testDevice)
        #expect((registration.description != nil) == testDevice)
    }

    @Test func dedupeResendsOnChangeOrAfterADay() {
        guard case .wanted(let wanted) = RegistrationPolicy.desired(Self.ready),
            case .wanted(let otherLocale) = RegistrationPolicy.desired(Self.with { $0.locale = "en-US" }),
            case .wanted(let newSession) = RegistrationPolicy.desired(Self.with { $0.sessionEpoch = 1 })
        else { return }
        let sent = Date(timeIntervalSince1970: 1_000_000)
        #expect(RegistrationPolicy.shouldSend(wanted, lastSuccess: nil, at: nil, now: sent))
        #expect(!RegistrationPolicy.shouldSend(wanted, lastSuccess: wanted, at: sent, now: sent.addingTimeInterval(3600)))
        #expect(RegistrationPolicy.shouldSend(wanted, lastSuccess: wanted, at: sent, now: sent.addingTimeInterval(86_400)))
        #expect(RegistrationPolicy.shouldSend(otherLocale, lastSuccess: wanted, at: sent, now: sent.addingTimeInterval(60)))
        #expect(RegistrationPolicy.shouldSend(newSession, lastSuccess: wanted, at: sent, now: sent.addingTimeInterval(60)))
        guard case .wanted(let rotated) = RegistrationPolicy.desired(Self.with { $0.deviceToken = "02cdef" }) else { return }
        #expect(RegistrationPolicy.toDelete(previous: wanted, wanted: rotated) == wanted)
        #expect(RegistrationPolicy.toDelete(previous: wanted, wanted: otherLocale) == nil, "same token and region: an update, not a move")
    }

    @Test(
        arguments: [
            (204, nil, false, RegistrationPolicy.Outcome.success), (422, nil, false, .permanent(status: 422)),
            (404, nil, false, .permanent(status: 404)),
            (404, nil, true, .success), (429, "30", false, .retryable(retryAfter: 30)), (503, nil, false, .retryable(retryAfter: nil)),
            (nil, nil, false, .retryable(retryAfter: nil)),
        ] as [(Int?, String?, Bool, RegistrationPolicy.Outcome)])
    func outcomes(status: Int?, retryAfter: String?, isDelete: Bool, expected: RegistrationPolicy.Outcome) {
        #expect(RegistrationPolicy.outcome(status: status, retryAfter: retryAfter, isDelete: isDelete) == expected)
    }

    @Test func backoffGrowsIsBoundedAndHonoursRetryAfter() {
        #expect(RegistrationPolicy.retryDelay(attempt: 0, retryAfter: nil, jitter: 1) == 2)
        #expect(RegistrationPolicy.retryDelay(attempt: 3, retryAfter: nil, jitter: 1) == 16)
        #expect(RegistrationPolicy.retryDelay(attempt: 3, retryAfter: nil, jitter: 0) == 8)
        #expect(RegistrationPolicy.retryDelay(attempt: 30, retryAfter: nil, jitter: 1) == 900)
        #expect(RegistrationPolicy.retryDelay(attempt: 0, retryAfter: 60, jitter: 1) == 60)
    }
}
