import Core
import HTML
import HTTPServer

/// An alert's translations: side by side with the English, one per
/// language of the catalog (chosen by name), edited in place or deleted,
/// with a warning when no registered device reads the language.
struct AlertTranslationConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [
            authoredAlertRoute("POST", "/admin/alerts/:alert/translations", .author) { request, context, alert in
                await translate(request, context, alert)
            },
            authoredAlertRoute("GET", "/admin/alerts/:alert/translations/delete", .author) { request, context, alert in
                await confirmDeleteTranslation(request, context, alert)
            },
            authoredAlertRoute("POST", "/admin/alerts/:alert/translations/delete", .author) { request, context, alert in
                await deleteTranslation(request, context, alert)
            },
        ]
    }

    /// The section of an alert's page that lists and edits its translations.
    func translationSection(
        _ request: Request, _ session: ConsoleStore.Session, alert: ServiceAlert, translations: [AlertTranslation],
        groups: [(locale: String?, count: Int)], problems: [String]
    ) -> HTML {
        let author = ConsoleRules.may(session.user.role, .author)
        let readers = Dictionary(groups.compactMap { group in group.locale.map { ($0.lowercased(), group.count) } }, uniquingKeysWith: +)
        let editing = request.parameters["translation"].flatMap { wanted in translations.first { $0.language == wanted } }
        let rows: [[any HTMLContent]] =
            [["English (source)", alert.header, alert.description, ""]]
            + translations.map { translation in
                let stale = translation.sourceVersion != alert.sourceVersion
                var notes: [any HTMLContent] = []
                if stale {
                    notes.append(
                        tag(
                            "span",
                            [
                                .class("badge stale"),
                                Attribute("title", "The English changed after this was translated; it is not pushed or served until updated"),
                            ],
                            ["stale: English changed"]))
                }
                if readers[translation.language.lowercased()] == nil {
                    notes.append(tag("span", [.class("badge stale")], ["no registered device reads this language yet"]))
                }
                if author {
                    notes.append(
                        tag(
                            "a", [.href("/admin/alerts/\(alert.id)?translation=\(PercentEncoding.encode(translation.language))#translation-form")],
                            ["Edit"]))
                    notes.append(
                        tag(
                            "a",
                            [.href("/admin/alerts/\(alert.id)/translations/delete?language=\(PercentEncoding.encode(translation.language))")],
                            ["Delete…"]))
                }
                return [AlertWords.languageName(translation.language), translation.header, translation.description, HTML.join(notes.map { $0.html })]
            }
        var parts: [any HTMLContent] = [
            tag("h2", [.id("translations")], ["Translations"]),
            ConsoleLayout.table(caption: "The English text and its translations", headers: ["Language", "Header", "Description", ""], rows: rows),
        ]
        guard author else { return .join(parts.map { $0.html }) }
        let submitted = request.method == "POST" ? request.parameters : Parameters()
        let chosen = submitted["language"] ?? editing?.language
        let options = catalogLanguages.map { ($0, AlertWords.languageName($0) + (readers[$0.lowercased()] == nil ? " · no device yet" : "")) }
        parts += [
            ConsoleLayout.problems(problems),
            ConsoleLayout.form(
                "/admin/alerts/\(alert.id)/translations", session, attributes: [.id("translation-form")],
                [
                    tag("h3", [], [editing.map { "Edit the \(AlertWords.languageName($0.language)) translation" } ?? "Add a translation"]),
                    ConsoleLayout.select(
                        "Language", name: "language", options: [("", "Choose a language")] + options, selected: chosen,
                        hint: "The languages riders' phones are matched to. One translation per language: saving one that exists replaces it.",
                        id: "translation-language"),
                    ConsoleLayout.field(
                        "Header", name: "header", value: submitted["header"] ?? editing?.header, required: true,
                        maxLength: FieldLimits.alertHeader, id: "translation-header"),
                    ConsoleLayout.textArea(
                        "Description", name: "description", value: submitted["description"] ?? editing?.description, rows: 3,
                        required: !alert.description.isEmpty,
                        hint: alert.description.isEmpty ? nil : "Required: the English has a description, so riders of this language need one too.",
                        maxLength: FieldLimits.alertDescription, id: "translation-description"),
                    tag("button", [Attribute("type", "submit")], ["Save translation"]),
                ]),
        ]
        return .join(parts.map { $0.html })
    }

    /// The catalog's languages (`--locales`), the choices of the form.
    var catalogLanguages: [String] { administration.catalog.languages }

    func translate(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        do {
            let saved = try await administration(context.session).translate(
                id: alert.id, language: request.parameters["language"] ?? "",
                header: request.parameters["header"],
                description: request.parameters["description"])
            let readers = try await ConsoleStats.languageGroups(database: database, regionID: alert.regionID)
            let read = readers.contains { $0.locale?.lowercased() == saved.language.lowercased() }
            return .seeOther("/admin/alerts/\(alert.id)?done=\(read ? "translated" : "translated-unread")#translations")
        } catch let error as AdministrationError {
            return await AlertConsolePages(console: console, services: services).alertPage(
                request, context, alert, translationProblems: error.messages, status: 422)
        } catch { return unavailable(error) }
    }

    /// "Delete…" asks first: the devices of that language get the English from then on.
    func confirmDeleteTranslation(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let language = request.parameters["language"] ?? ""
        let translations: [AlertTranslation]
        do { translations = try await alerts.translations(alertID: alert.id) } catch { return unavailable(error) }
        guard let translation = translations.first(where: { $0.language == language }) else {
            return .seeOther("/admin/alerts/\(alert.id)#translations")
        }
        let name = AlertWords.languageNames[translation.language] ?? translation.language
        return ConsoleLayout.respond(
            200,
            ConsoleLayout.page(
                "Delete the \(name) translation?", context,
                [
                    tag(
                        "p", [],
                        [
                            "“", translation.header, "” is deleted: \(name) devices get the English of “", alert.header,
                            "” in the feed and in pushes from now on. Pushes already delivered stay on their phones.",
                        ]),
                    ConsoleLayout.form(
                        "/admin/alerts/\(alert.id)/translations/delete", context.session,
                        [
                            tag("input", [Attribute("type", "hidden"), Attribute("name", "language"), Attribute("value", translation.language)]),
                            ConsoleLayout.confirmActions("Delete the translation", cancel: "/admin/alerts/\(alert.id)#translations"),
                        ]),
                ]))
    }

    func deleteTranslation(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        do {
            try await administration(context.session).deleteTranslation(id: alert.id, language: request.parameters["language"] ?? "")
            return .seeOther("/admin/alerts/\(alert.id)?done=translation-deleted#translations")
        } catch AdministrationError.notFound {
            return .seeOther("/admin/alerts/\(alert.id)#translations")
        } catch { return unavailable(error) }
    }
}

extension AlertTranslationConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
