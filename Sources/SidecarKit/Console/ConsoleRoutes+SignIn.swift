import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Signing in and out, and the page that picks a region.
extension ConsoleRoutes {
    // MARK: Login and logout

    func home(_ request: Request) async -> Response {
        await signedIn(request, .read) { _, session in
            let visible = visibleRegions(session.user)
            if visible.count == 1 { return .seeOther("/admin/regions/\(visible[0].id)") }
            let pageContext = await context(session, region: nil, .regions)
            let cards: [any HTMLContent] = visible.map { region in
                tag(
                    "li", [.class("card")],
                    [
                        tag("a", [.href("/admin/regions/\(region.id)")], [pageContext.pickerLabel(region)]), " ",
                        tag("span", [.class("hint")], ["region \(region.id)"]),
                    ])
            }
            return ConsoleLayout.respond(
                200,
                ConsoleLayout.page(
                    "Regions", pageContext,
                    [
                        visible.isEmpty
                            ? tag("p", [], ["Your account has no regions that this server's directory lists."])
                            : tag("ul", [.class("grid"), Attribute("role", "list")], cards)
                    ]))
        }
    }

    func loginPage(_ request: Request, problems: [String] = [], email: String = "", status: Int = 200) async -> Response {
        let token: String
        do { token = try await formTokens.issue(purpose: "login", now: now) } catch { return unavailable(error) }
        let next = Self.safeNext(request.parameters["next"])
        let page = ConsoleLayout.bare(
            "Sign in",
            [
                Self.notice(request).map { tag("p", [.class("notice"), Attribute("role", "status")], [$0]) } ?? HTML.empty,
                ConsoleLayout.problems(problems),
                tag(
                    "form", [Attribute("method", "post"), Attribute("action", "/admin/login")],
                    [
                        tag("input", [Attribute("type", "hidden"), Attribute("name", "login_token"), Attribute("value", token)]),
                        tag("input", [Attribute("type", "hidden"), Attribute("name", "next"), Attribute("value", next)]),
                        ConsoleLayout.field(
                            "Email", name: "email", value: email, type: "email", required: true, maxLength: 254,
                            extra: [Attribute("autocomplete", "username"), Attribute("autofocus", nil)]),
                        ConsoleLayout.field(
                            "Password", name: "password", value: nil, type: "password", required: true, maxLength: 1024,
                            extra: [Attribute("autocomplete", "current-password")]),
                        tag("button", [Attribute("type", "submit")], ["Sign in"]),
                    ]),
                tag("p", [.class("hint")], ["Accounts are created by the server's operator: sidecar user create."]),
            ])
        return ConsoleLayout.respond(status, page)
            .adding(header: "Set-Cookie", cookie(Self.loginCookie, token, path: "/admin/login", maxAge: 3600, sameSite: "Strict"))
    }

    /// Password checks run here: two at a time, eight waiting at most. scrypt
    /// takes 32 MiB and tens of milliseconds each, so a flood of sign-ins is
    /// refused beyond that (503) instead of taking the memory and the CPU
    /// every other request needs. One pool per process.
    static let passwordChecks = WorkerPool(name: "console-login", threads: 2, queueCapacity: 8)

    func login(_ request: Request) async -> Response {
        // The form must come from our own login page (login CSRF): the same
        // token in the cookie and the form, and one this server issued.
        guard let expected = request.cookie(Self.loginCookie), let presented = request.parameters["login_token"],
            SecureCompare.equal(presented, expected), await formTokens.isValid(presented, purpose: "login", now: now)
        else {
            return await loginPage(request, problems: ["The sign-in form expired. Please try again."], status: 403)
        }
        let rawEmail = request.parameters["email"] ?? ""
        do {
            switch try await checkSignIn(email: rawEmail, password: request.parameters["password"] ?? "", request) {
            case .clientLocked:
                let retryAfter = ConsoleRules.loginWindowSeconds
                return await loginPage(
                    request, problems: ["Too many failed sign-ins from your address. Try again in \(retryAfter / 60 + 1) minutes."],
                    email: rawEmail, status: 429
                ).adding(header: "Retry-After", String(retryAfter))
            case .accountLocked:
                return await loginPage(
                    request, problems: ["Too many failed sign-ins for this account from your address. Try again in 15 minutes."],
                    email: rawEmail, status: 429
                ).adding(header: "Retry-After", String(ConsoleRules.loginWindowSeconds))
            case .busy:
                return await loginPage(
                    request, problems: ["The server is busy checking other sign-ins. Try again in a few seconds."],
                    email: rawEmail, status: 503
                ).adding(header: "Retry-After", "2")
            case .refused:
                return await loginPage(request, problems: ["Wrong email or password."], email: rawEmail, status: 401)
            case .verified(let user):
                let (cookieValue, _) = try await store.startSession(userID: user.id, now: now)
                logger.info("console sign-in", [("user", String(user.id))])
                return Response.seeOther(Self.safeNext(request.parameters["next"]))
                    .adding(header: "Set-Cookie", cookie(Self.sessionCookie, cookieValue, path: "/admin"))
                    .adding(header: "Set-Cookie", cookie(Self.loginCookie, "", path: "/admin/login", maxAge: 0, sameSite: "Strict"))
                    .adding(header: "Cache-Control", "no-store")
            }
        } catch { return unavailable(error) }
    }

    /// What checking an email and password came to.
    enum SignInCheck: Sendable {
        case verified(ConsoleStore.User)
        /// Wrong email or password (or one that cannot be an account's).
        case refused
        /// Too many failed sign-ins from this address.
        case clientLocked
        /// Too many failures on this account, and this address was among them.
        case accountLocked
        /// Every password check is taken: try again in a moment.
        case busy
    }

    /// Checks a sign-in, the console's form and the admin API's
    /// `POST /api/admin/v1/session` alike, under one set of limits: only
    /// failed sign-ins count against an address, and an account under attack
    /// stays open to its owner (only the addresses that have been failing on
    /// it are refused, before any hashing). Failures are audited.
    func checkSignIn(email rawEmail: String, password: String, _ request: Request) async throws -> SignInCheck {
        // Only failed sign-ins count against an address: one busy office's
        // colleagues signing in never lock each other out.
        if await clientLogins.isExhausted(request.clientKey) { return .clientLocked }
        guard let email = ConsoleRules.normalizedEmail(rawEmail), password.utf8.count <= ConsoleRules.maximumPasswordLength else {
            _ = await clientLogins.check(request.clientKey)
            return .refused
        }
        let source = email + "|" + request.clientKey
        if await accountLogins.isExhausted(email), await failingSources.peek(source) > 0 { return .accountLocked }
        let found = try await store.credentials(email: email)
        // Hash even for an unknown account so timing does not tell.
        guard let verified = await Self.passwordChecks.run({ PasswordHash.verify(password, against: found?.1 ?? Self.decoyHash) }) else {
            return .busy
        }
        guard let (user, _) = found, verified else {
            _ = await clientLogins.check(request.clientKey)
            _ = await accountLogins.check(email)
            _ = await failingSources.check(source)
            logger.info("console sign-in refused", [("client", request.clientAddress)])
            await audit.record(
                actor: "anonymous", action: "console.sign_in_failed", regionID: nil,
                target: found.map { "user \($0.0.id)" } ?? "no such account", detail: "client=\(request.clientAddress)", now: now)
            return .refused
        }
        return .verified(user)
    }

    /// A hash of nothing anyone knows, verified when the account does not exist.
    static let decoyHash = (try? PasswordHash.hash(Base64URL.encode(SecureRandom.bytes(32)))) ?? ""

    func logout(_ session: ConsoleStore.Session) async -> Response {
        do { try await store.endSession(idHash: session.idHash) } catch { return unavailable(error) }
        return Response.seeOther("/admin/login?done=logged-out")
            .adding(header: "Set-Cookie", cookie(Self.sessionCookie, "", path: "/admin", maxAge: 0))
    }
}
