import Core
import FoundationEssentials
import HTML
import HTTPServer
import OBA
import QRCode

/// Issue 16: what the sidecar's host answers for the links the apps make:
/// the site-association files, share pages for a stop and a trip, and the
/// printable add-region page.
struct ShareRoutes: Sendable {
    let regions: RegionDirectory
    let oba: OBAGateway
    let settings: LinkSettings
    let publicURL: PublicBaseURL
    let clock: any WallClock
    let logger: Logger
    /// Arrivals per region and stop, kept briefly: a shared link opened by a
    /// whole group chat costs one OneBusAway request.
    let arrivals: TimedCache<String, OBAResponse<StopArrivals>>
    /// Region time zones (from `sidecar region set --timezone`).
    let zones: @Sendable (Int) async -> ZoneInfo
    /// The per-client budget of OneBusAway lookups every route draws on
    /// (`--upstream-lookup-limit`): beyond it a page is served from the
    /// cache, or without live times, and the agency's server is not asked.
    let lookups: FixedWindowRateLimiter

    /// How long a share page may be cached (also the arrivals cache's life).
    static let cacheSeconds = 30

    var routes: [Route] {
        func page(_ path: String, _ handler: @escaping Handler) -> Route {
            Route("GET", path, errorStyle: SharePages.errorStyle, handler: handler)
        }
        return [
            Route("GET", "/.well-known/apple-app-site-association", parsesParameters: false) { _ in appleAppSiteAssociation() },
            Route("GET", "/.well-known/assetlinks.json", parsesParameters: false) { _ in assetLinks() },
            page("/regions/:region/stops/:stop") { request in await sharePage(request, trip: false) },
            page("/regions/:region/stops/:stop/trips") { request in await sharePage(request, trip: true) },
            page("/regions/:region/add") { request in addRegionPage(request) },
            SharePages.stylesheetRoute,
        ]
    }

    // MARK: Site association

    func appleAppSiteAssociation() -> Response {
        guard let ids = settings.appleAppIDs else { return .json(404, ["error": "Not Found"]) }
        return Response.json(200, LinkRules.appleAppSiteAssociation(appIDs: ids, claimStopPages: settings.claimStopPages))
            .adding(header: "Cache-Control", "public, max-age=3600")
    }

    func assetLinks() -> Response {
        guard let apps = settings.androidApps else { return .json(404, ["error": "Not Found"]) }
        return Response.json(200, LinkRules.assetLinks(apps)).adding(header: "Cache-Control", "public, max-age=3600")
    }

    // MARK: Share pages

    /// What a share link names, read strictly.
    struct Target: Sendable {
        var region: Region
        var stopID: String
        var tripID: String?
        var serviceDate: EpochMillis?
        var stopSequence: Int?
        var vehicleID: String?
    }

    enum Reading { case target(Target), refused(Response) }

    func read(_ request: Request, trip: Bool) -> Reading {
        guard let regionText = request.pathParameters["region"], regionText.count <= 9, let regionID = Int(regionText), regionID >= 0,
            let region = regions.region(id: regionID)
        else {
            return .refused(SharePages.notFound("We don't know that region."))
        }
        guard let stopID = request.pathParameters["stop"], LinkRules.isPlausibleIdentifier(stopID) else {
            return .refused(SharePages.notFound("That stop link is broken."))
        }
        var target = Target(region: region, stopID: stopID)
        guard trip else { return .target(target) }
        guard let tripID = request.parameters["trip_id"], LinkRules.isPlausibleIdentifier(tripID) else {
            return .refused(SharePages.problem(400, "This trip link is missing its trip.", "Ask the person who shared it to share it again."))
        }
        guard let serviceDateText = request.parameters["service_date"], let serviceDate = LinkRules.serviceDateMillis(serviceDateText) else {
            return .refused(SharePages.problem(400, "This trip link has no valid service date.", "Ask the person who shared it to share it again."))
        }
        target.tripID = tripID
        target.serviceDate = serviceDate
        if let sequence = request.parameters["stop_sequence"], !sequence.isEmpty {
            guard let value = Int(sequence), (0...100_000).contains(value) else {
                return .refused(
                    SharePages.problem(400, "This trip link has an invalid stop sequence.", "Ask the person who shared it to share it again."))
            }
            target.stopSequence = value
        }
        if let vehicle = request.parameters["vehicle_id"], LinkRules.isPlausibleIdentifier(vehicle) { target.vehicleID = vehicle }
        return .target(target)
    }

    func sharePage(_ request: Request, trip: Bool) async -> Response {
        let target: Target
        switch read(request, trip: trip) {
        case .target(let read): target = read
        case .refused(let response): return response
        }
        if let template = settings.redirectTemplate,
            let location = LinkRules.redirect(
                template: template,
                values: [
                    "region_id": String(target.region.id), "stop_id": target.stopID, "trip_id": target.tripID ?? "",
                    "service_date": target.serviceDate.map { String($0.value) } ?? "", "stop_sequence": target.stopSequence.map(String.init) ?? "",
                ])
        {
            return Response(status: 302, headers: [("Location", location), ("Cache-Control", "no-store")])
        }
        let zone = await zones(target.region.id)
        var live: OBAResponse<StopArrivals>?
        var unavailable = false
        let key = "\(target.region.id)|\(target.stopID)"
        if let cached = arrivals.value(key) {
            live = cached
        } else if case .limited = await lookups.check(request.clientKey) {
            unavailable = true
        } else {
            do {
                let fetched = try await oba.arrivalsAndDepartures(region: target.region, stopID: target.stopID, minutesBefore: 5, minutesAfter: 60)
                arrivals.store(fetched, for: key)
                live = fetched
            } catch .notFound {
                return SharePages.notFound("We couldn't find that stop in \(target.region.name).")
            } catch {
                logger.info("share page without live times", [("region", String(target.region.id)), ("error", "\(error)")])
                unavailable = true
            }
        }
        var highlighted: ArrivalAndDeparture?
        if let tripID = target.tripID, let serviceDate = target.serviceDate {
            highlighted =
                live?.entry.arrivalsAndDepartures.first { $0.tripId == tripID && $0.serviceDate == serviceDate }
                ?? live?.entry.arrivalsAndDepartures.first { $0.tripId == tripID }
            if highlighted == nil && !unavailable, await lookups.check(request.clientKey) == .allowed {
                do {
                    highlighted = try await oba.arrivalAndDeparture(
                        region: target.region, stopID: target.stopID, tripID: tripID, serviceDate: serviceDate,
                        vehicleID: target.vehicleID, stopSequence: target.stopSequence
                    ).entry
                } catch .notFound {
                    return SharePages.notFound("That trip isn't running at this stop any more.")
                } catch {
                    unavailable = true
                }
            }
        }
        let page = SharePages.share(
            SharePages.ShareContent(
                target: target, response: live, highlighted: highlighted, unavailable: unavailable, zone: zone,
                now: live?.currentTime ?? clock.nowMillis,
                canonicalURL: publicURL.url + request.rawPath + (target.tripID == nil ? "" : "?" + Self.canonicalQuery(target)),
                appLink: LinkRules.viewStopLink(stopID: target.stopID, regionID: target.region.id), settings: settings))
        return SharePages.respond(200, page).adding(header: "Cache-Control", "public, max-age=\(Self.cacheSeconds)")
    }

    static func canonicalQuery(_ target: Target) -> String {
        var items = [
            ("trip_id", target.tripID ?? ""),
            ("service_date", String(format3(Date(epochMillis: (target.serviceDate ?? 0).value).timeIntervalSince1970))),
        ]
        if let sequence = target.stopSequence { items.append(("stop_sequence", String(sequence))) }
        return items.map { "\($0.0)=\(LinkRules.percentEncoded($0.1))" }.joined(separator: "&")
    }

    /// `1710273600.0`, as the app writes a service date.
    static func format3(_ seconds: Double) -> String { String(Int64(seconds)) + ".0" }

    // MARK: Add-region page

    func addRegionPage(_ request: Request) -> Response {
        guard let regionText = request.pathParameters["region"], regionText.count <= 9, let regionID = Int(regionText),
            let region = regions.region(id: regionID)
        else { return SharePages.notFound("We don't know that region.") }
        guard let link = Self.addRegionLink(region, publicURL: publicURL.url) else {
            return SharePages.problem(404, "This region can't be added by a link.", "Its OneBusAway server is not listed in the regions directory.")
        }
        if case let cleartext = LinkRules.cleartextProblems(link, allowHTTP: settings.allowHTTPLinks), !cleartext.isEmpty {
            // No code to scan: the apps would add a region they cannot reach.
            return SharePages.problem(
                409, "This region's link is not ready.",
                "Its sidecar address (\(link.sidecarURL ?? "")) is plain http, which the OneBusAway apps refuse: Android allows http only to 10.0.2.2 and iOS not at all. The operator must serve it over https (set --public-url to the https address)."
            )
        }
        let qr = try? QRCode(LinkRules.addRegionLink(link))
        return SharePages.respond(200, SharePages.addRegion(region: region, link: LinkRules.addRegionLink(link), qr: qr, settings: settings))
            .adding(header: "Cache-Control", "public, max-age=300")
    }

    /// The add-region values of a directory region: its id, its OneBusAway
    /// server, trip planners and analytics, and this sidecar (the
    /// directory's `sidecarBaseUrl`, else the public URL).
    static func addRegionLink(_ region: Region, publicURL: String) -> LinkRules.AddRegion? {
        guard let oba = region.obaBaseURL, !oba.isEmpty else { return nil }
        return LinkRules.AddRegion(region: region, sidecarURL: publicURL)
    }
}

/// The link settings of `serve`.
struct LinkSettings: Sendable {
    var appleAppIDs: [String]?
    var androidApps: [LinkRules.AndroidApp]?
    var claimStopPages = true
    var appStoreURL: String?
    var playStoreURL: String?
    var redirectTemplate: String?
    /// Hand out add-region links to an `http://` sidecar beyond loopback and
    /// `10.0.2.2` (`--allow-http-links`, a test rig).
    var allowHTTPLinks = false
}

extension ShareRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            regions: context.regions, oba: context.oba, settings: context.configuration.links, publicURL: context.publicURL,
            clock: context.clock, logger: context.logger,
            arrivals: TimedCache(lifetimeSeconds: Double(ShareRoutes.cacheSeconds), maxEntries: 5000, now: context.now),
            zones: { regionID in await context.zone(regionID: regionID) }, lookups: context.limits.upstreamLookups)
    }
}
