import Basics
import DBusKit
import Dispatch
import FoundationEssentials
import PlayerCore
import Synchronization

/// What a desktop notification about the playing track says.
public struct TrackNotice: Sendable, Equatable {
    /// The queue entry it is about (its MPRIS track id).
    public var track: String
    /// The title (the notification's summary).
    public var title: String
    /// Artist and album, on one line (the body); empty when neither is known.
    public var body: String
    /// The cover art as a `file://` URL, when there is one.
    public var art: String?

    /// Creates a notice.
    public init(track: String, title: String, body: String, art: String?) {
        self.track = track
        self.title = title
        self.body = body
        self.art = art
    }

    /// The notice for the track MPRIS `metadata` describes, when `playing`; nil otherwise (a
    /// paused or stopped player announces nothing).
    public init?(metadata: [String: DBusValue], playing: Bool) {
        guard playing, let track = metadata["mpris:trackid"]?.objectPathValue,
            let title = metadata["xesam:title"]?.stringValue, !title.isEmpty
        else { return nil }
        let artists = (metadata["xesam:artist"]?.stringArrayValue ?? []).joined(separator: ", ")
        let album = metadata["xesam:album"]?.stringValue ?? ""
        self.init(
            track: track, title: title, body: [artists, album].filter { !$0.isEmpty }.joined(separator: " — "),
            art: metadata["mpris:artUrl"]?.stringValue)
    }
}

/// When notices go out. Pure: the time is passed in.
///
/// - A track that starts is announced ``settle`` later, with what is known of it then: its
///   tags arrive just after it starts, and until they do its title is the file's name.
/// - At most one notification per ``interval``; of several waiting, the latest wins.
/// - Nothing that repeats the notification on screen (a pause and play); a change of what the
///   on-screen track's notification says (tags that came late) updates it.
public struct NoticePacer: Sendable {
    /// The least time between two notifications.
    public static let interval: Duration = .seconds(1)
    /// How long after a track starts its notification goes out.
    public static let settle: Duration = .milliseconds(300)

    /// What to do after an offer.
    public enum Decision: Sendable, Equatable {
        /// Show this notice now.
        case send(TrackNotice)
        /// Call ``due(now:)`` at this instant: a notice waits for its turn.
        case wait(until: ContinuousClock.Instant)
        /// Nothing to show.
        case nothing
    }

    private var shown: (notice: TrackNotice, at: ContinuousClock.Instant)?
    private var pending: (notice: TrackNotice, due: ContinuousClock.Instant)?

    /// Creates a pacer that has shown nothing.
    public init() {}

    /// The player's state now describes `notice` (nil: nothing to announce).
    public mutating func offer(_ notice: TrackNotice?, now: ContinuousClock.Instant) -> Decision {
        guard let notice, notice != shown?.notice else {
            pending = nil
            return .nothing
        }
        if let waiting = pending, waiting.notice.track == notice.track {
            pending = (notice, waiting.due)
            return .wait(until: waiting.due)
        }
        var due = shown?.notice.track == notice.track ? now : now + Self.settle
        if let shown { due = max(due, shown.at + Self.interval) }
        guard due > now else {
            shown = (notice, now)
            pending = nil
            return .send(notice)
        }
        pending = (notice, due)
        return .wait(until: due)
    }

    /// The waiting notice, once its time came.
    public mutating func due(now: ContinuousClock.Instant) -> TrackNotice? {
        guard let waiting = pending, now >= waiting.due else { return nil }
        pending = nil
        shown = (waiting.notice, now)
        return waiting.notice
    }
}

/// Shows a desktop notification (`org.freedesktop.Notifications`) when a track starts playing,
/// each replacing the previous one, paced by ``NoticePacer``. Without a notification server
/// the calls fail and are logged once; playback never waits for them.
final class TrackNotifier: Sendable {
    static let destination = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    private struct State {
        var pacer = NoticePacer()
        /// The id of the notification on screen, which the next one replaces.
        var shownID: UInt32 = 0
        /// The send in flight: the next waits for it, so it knows the id to replace.
        var lastSend: Task<Void, Never>?
        var failureLogged = false
    }

    private let connection: any MPRISBus
    private let state = Mutex(State())
    private let timers = DispatchQueue(label: "spool.mpris.notifications")
    private let log = Logger(label: "notify")

    init(connection: any MPRISBus) {
        self.connection = connection
    }

    /// The published state changed: `metadata` is the current track's, `playing` whether it plays.
    func consider(metadata: [String: DBusValue], playing: Bool) {
        let notice = TrackNotice(metadata: metadata, playing: playing)
        let decision = state.withLock { $0.pacer.offer(notice, now: .now) }
        switch decision {
        case .send(let notice):
            send(notice)
        case .wait(let until):
            let delay = max(0, (until - .now) / .microseconds(1))
            timers.asyncAfter(deadline: .now() + .microseconds(Int(delay))) { [weak self] in self?.fire() }
        case .nothing:
            break
        }
    }

    private func fire() {
        if let notice = state.withLock({ $0.pacer.due(now: .now) }) { send(notice) }
    }

    private func send(_ notice: TrackNotice) {
        state.withLock { state in
            let previous = state.lastSend
            state.lastSend = Task { [weak self] in
                await previous?.value
                await self?.show(notice)
            }
        }
    }

    private func show(_ notice: TrackNotice) async {
        let replaces = state.withLock { $0.shownID }
        var hints: [(String, DBusValue)] = [
            ("desktop-entry", .string("spool")), ("category", .string("x-spool.track")),
        ]
        if let art = notice.art { hints.append(("image-path", .string(art))) }
        do {
            let reply = try await connection.call(
                destination: Self.destination, path: Self.path, interface: Self.destination, method: "Notify",
                arguments: [
                    .string("Spool"), .uint32(replaces), .string(""), .string(notice.title), .string(notice.body),
                    .array(elementSignature: "s", []), .stringVariantDict(hints), .int32(-1),
                ], timeout: .seconds(2))
            let id = reply.first?.uint32Value ?? 0
            state.withLock { $0.shownID = id }
        } catch {
            let first = state.withLock { state in
                defer { state.failureLogged = true }
                return !state.failureLogged
            }
            if first { log.info("no desktop notification: \(error)") }
        }
    }
}
