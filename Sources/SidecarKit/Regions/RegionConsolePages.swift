import Core
import HTML
import HTTPServer

/// A region's settings the directory does not carry: its OneBusAway agency
/// id (the feed's informed entity) and its time zone (every time staff
/// read and type), with the checklist the dashboard shows while one is missing.
struct RegionConsolePages: ConsolePages {
    let console: ConsoleRoutes
    let settings: RegionSettingsStore
    /// Region settings are changed through the same administration as the API and the CLI.
    let administration: AlertAdministration

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/settings", .manageRegion) { request, context in await regionSettingsPage(request, context) },
            regionPage("POST", "/admin/regions/:region/settings", .manageRegion) { request, context in await saveRegionSettings(request, context) },
        ]
    }

    /// What a region still needs before staff can work in it; empty when set up.
    static func setupProblems(_ settings: RegionSettings?) -> [String] {
        var missing: [String] = []
        if settings?.agencyID?.presence == nil {
            missing.append("An agency id: the apps match alerts on it, and no alert can be created without one.")
        }
        if settings?.timezone?.presence == nil {
            missing.append("A time zone: until it is set, every time here is shown and read in UTC.")
        }
        return missing
    }

    /// The checklist on the dashboard, or nothing when the region is set up.
    static func setupChecklist(_ settings: RegionSettings?, _ context: ConsoleLayout.Context) -> HTML {
        let missing = Self.setupProblems(settings)
        guard !missing.isEmpty, let region = context.region else { return .empty }
        let action: any HTMLContent =
            ConsoleRules.may(context.session.user.role, .manageRegion)
            ? tag("a", [.href("/admin/regions/\(region.id)/settings"), .class("button")], ["Set up this region"])
            : tag("p", [.class("hint")], ["An administrator can set these in the region's settings."])
        return tag(
            "section", [.class("setup"), Attribute("aria-labelledby", "setup-title")],
            [
                tag("h2", [.id("setup-title")], ["This region is not set up yet"]),
                tag("ul", [], missing.map { tag("li", [], [$0]) }),
                action,
            ])
    }

    func regionSettingsPage(
        _ request: Request, _ context: ConsoleLayout.Context, values: [String: String] = [:], problems: [String] = [],
        status: Int = 200
    ) async -> Response {
        guard let region = context.region else { return notFound() }
        let settings: RegionSettings?
        do { settings = try await self.settings.all()[region.id] } catch { return unavailable(error) }
        let zone = await zone(regionID: region.id)
        let content: [any HTMLContent] = [
            ConsoleLayout.problems(problems),
            ConsoleLayout.form(
                "/admin/regions/\(region.id)/settings", context.session,
                [
                    ConsoleLayout.field(
                        "Agency id", name: "agency_id", value: values["agency_id"] ?? settings?.agencyID, required: true,
                        hint: "The OneBusAway agency id riders' apps match this region's alerts on (the feed's informed entity).",
                        maxLength: FieldLimits.identifier),
                    ConsoleLayout.field(
                        "Time zone", name: "timezone", value: values["timezone"] ?? settings?.timezone, required: true,
                        hint: "A name from the tz database, such as America/Los_Angeles or Asia/Kolkata. Now: " + zoneHint(zone),
                        maxLength: 64, extra: [Attribute("list", "zones"), Attribute("autocomplete", "off")]),
                    tag(
                        "datalist", [.id("zones")],
                        ZoneCatalog.identifiers(directory: console.zoneDirectory).map { tag("option", [Attribute("value", $0)]) }),
                    ConsoleLayout.checkbox(
                        "This region does not observe daylight time", name: "fixed_offset",
                        checked: values["fixed_offset"] == "true" || (settings?.timezone.map(ZoneCatalog.fixedOffsetZones.contains) ?? false),
                        hint: "Only then are EST, MST and HST accepted as they are (the same offset all year)."),
                    ConsoleLayout.checkbox(
                        "Publishing an alert and sending to everyone need a second person's approval", name: "require_approval",
                        checked: values["require_approval"].map { $0 == "true" } ?? (settings?.requiresApproval ?? false),
                        hint: "The one who asks cannot approve; API keys ask and wait for a person. A request lapses after a day."),
                    ConsoleLayout.field(
                        "Pushes a minute", name: "push_pace",
                        value: values["push_pace"] ?? settings.map { $0.pushPacePerMinute == 0 ? "" : String($0.pushPacePerMinute) },
                        type: "number",
                        hint:
                            "Paces every send to this region (60 to 1000000), so riders tapping a push do not all reach the OneBusAway server in the same minute; the send's confirmation says when the last device gets it. Severe alerts go at full speed. Empty: as fast as the push service takes them.",
                        maxLength: 7),
                    tag("div", [.class("actions")], [tag("button", [Attribute("type", "submit")], ["Save settings"])]),
                ]),
        ]
        var settingsContext = context
        settingsContext.section = .dashboard
        return ConsoleLayout.respond(status, ConsoleLayout.page("\(region.name): settings", settingsContext, notice: Self.notice(request), content))
    }

    func saveRegionSettings(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        let values = [
            "agency_id": request.parameters["agency_id"] ?? "", "timezone": request.parameters["timezone"] ?? "",
            "fixed_offset": request.parameters["fixed_offset"] == "true" ? "true" : "",
            "push_pace": request.parameters["push_pace"] ?? "",
            "require_approval": request.parameters["require_approval"] == "true" ? "true" : "false",
        ]
        do {
            _ = try await administration.acting(as: "user:" + context.session.user.email).setRegion(
                id: region.id, agencyID: values["agency_id"],
                timezone: values["timezone"]?.presence ?? "none", fixedOffset: values["fixed_offset"] == "true",
                pushPace: values["push_pace"]?.presence ?? "0", requireApproval: values["require_approval"])
            return .seeOther("/admin/regions/\(region.id)?done=region-saved")
        } catch let error as AdministrationError {
            return await regionSettingsPage(request, context, values: values, problems: error.messages, status: 422)
        } catch { return unavailable(error) }
    }
}

extension RegionConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) {
        self.init(console: console, settings: RegionSettingsStore(database: context.database), administration: context.administration)
    }
}
