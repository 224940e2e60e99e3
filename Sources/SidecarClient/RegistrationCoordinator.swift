import Foundation

/// Turns an app's lifecycle events into desired states for a
/// `RegistrationQueue`, following `push-registration-queue-design.txt`: it
/// records what it observes (authorization, token, region, locale, test
/// device, session) and describes where the server should end up; the queue
/// decides whether that takes a POST, a DELETE or nothing.
///
/// Call it from the three triggers, as often as they fire (a repeat costs
/// nothing):
/// - `appBecameActive(authorization:)` on launch and every foreground;
/// - `receivedDeviceToken(_:)` whenever APNs or FCM delivers a token;
/// - `regionChanged(regionID:sidecarURL:clientRegionID:)` on a region change.
///
/// Every entry point is synchronous and safe from any thread: it takes a
/// stamp in call order before handing the state to the queue's actor, so a
/// later call is never overtaken by an earlier one.
public final class RegistrationCoordinator: @unchecked Sendable {
    public let queue: RegistrationQueue
    private let lock = NSLock()
    private var inputs: RegistrationPolicy.Inputs
    private var signedIn: Bool
    /// Hand-offs not yet known to have reached the queue (awaited by `settle`).
    private var handOffs: [Task<Void, Never>] = []

    /// `inputs` holds what is known at launch (authorization is usually
    /// `.notDetermined` until read). Apps without accounts leave `signedIn` true.
    public init(queue: RegistrationQueue, inputs: RegistrationPolicy.Inputs, signedIn: Bool = true) {
        self.queue = queue
        self.inputs = inputs
        self.signedIn = signedIn
    }

    /// The state the server should reach, from what was observed so far.
    public var desired: RegistrationPolicy.Desired {
        lock.withLock { signedIn ? RegistrationPolicy.desired(inputs) : .unresolved }
    }

    /// What the queue achieved (for a settings screen or diagnostics).
    public var status: RegistrationQueue.Status {
        get async { await queue.status }
    }

    // MARK: The three triggers

    /// Launch and every foreground: the notification authorization as the OS
    /// reports it now (provisional and ephemeral count as granted). This is
    /// also what keeps the token past the server's 180-day prune.
    @discardableResult
    public func appBecameActive(authorization: RegistrationPolicy.Inputs.Authorization) -> Task<Void, Never> {
        update { $0.authorization = authorization }
    }

    /// A token from APNs, as the `Data` the app delegate receives: sent as
    /// lower-case hex, the way the apps encode it.
    @discardableResult
    public func receivedDeviceToken(_ token: Data) -> Task<Void, Never> {
        receivedDeviceToken(token.map { String(format: "%02x", $0) }.joined())
    }

    /// A token as text (FCM's, or APNs's already hex-encoded).
    @discardableResult
    public func receivedDeviceToken(_ token: String) -> Task<Void, Never> {
        update { $0.deviceToken = token }
    }

    /// The rider's region changed. `sidecarURL` is nil for a region without a
    /// sidecar; `clientRegionID` is the region the app's sidecar client was
    /// built for, which lags behind on a switch to such a region.
    @discardableResult
    public func regionChanged(regionID: Int?, sidecarURL: URL?, clientRegionID: Int?) -> Task<Void, Never> {
        update {
            $0.regionID = regionID
            $0.sidecarURL = sidecarURL
            $0.clientRegionID = clientRegionID
        }
    }

    // MARK: Other inputs

    /// The rider's locale changed (send it unnormalised; the server maps it).
    @discardableResult
    public func localeChanged(_ locale: String) -> Task<Void, Never> {
        update { $0.locale = locale }
    }

    /// The Debug screen's test-device switch or name changed.
    @discardableResult
    public func testDeviceChanged(wanted: Bool, name: String?) -> Task<Void, Never> {
        update {
            $0.wantsTestDevice = wanted
            $0.testDeviceName = name
        }
    }

    /// A logout, account switch, or the app's own "stop notifications"
    /// switch: the session epoch moves on and the registration is deleted.
    @discardableResult
    public func sessionEnded() -> Task<Void, Never> {
        let stamp: UInt64 = lock.withLock {
            signedIn = false
            inputs.sessionEpoch += 1
            return RegistrationStamp.next()
        }
        return handOff { queue in await queue.withdraw(stamp: stamp) }
    }

    /// A login (after the logout that preceded it): register for the new session.
    @discardableResult
    public func sessionStarted() -> Task<Void, Never> {
        let (desired, stamp) = lock.withLock {
            signedIn = true
            return (RegistrationPolicy.desired(inputs), RegistrationStamp.next())
        }
        return handOff { queue in await queue.submit(desired, stamp: stamp) }
    }

    /// Waits until every hand-off has reached the queue and it is idle
    /// (tests; an app may call it before it is suspended).
    public func settle() async {
        while let next = lock.withLock({ handOffs.isEmpty ? nil : handOffs.removeFirst() }) {
            await next.value
        }
        await queue.settle()
    }

    // MARK: Internals

    private func update(_ change: (inout RegistrationPolicy.Inputs) -> Void) -> Task<Void, Never> {
        // The stamp is taken under the same lock as the change, so stamp
        // order is the order in which the inputs changed.
        let next: (RegistrationPolicy.Desired, UInt64)? = lock.withLock {
            change(&inputs)
            return signedIn ? (RegistrationPolicy.desired(inputs), RegistrationStamp.next()) : nil
        }
        guard let (desired, stamp) = next else { return Task {} }  // signed out: nothing to register until a login
        return handOff { queue in await queue.submit(desired, stamp: stamp) }
    }

    private func handOff(_ work: @escaping @Sendable (RegistrationQueue) async -> Void) -> Task<Void, Never> {
        let queue = self.queue
        let task = Task { await work(queue) }
        lock.withLock {
            handOffs.append(task)
            // Older hand-offs are superseded by their stamps; keep the list short.
            if handOffs.count > 64 { handOffs.removeFirst(handOffs.count - 64) }
        }
        return task
    }
}
