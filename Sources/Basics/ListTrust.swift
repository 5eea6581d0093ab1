import FoundationEssentials

/// What the entries of a list may name, decided by where the list came from. Spool follows lists
/// written by strangers (station files, remote playlists, HLS playlists); an entry inherits the
/// trust of its list, so what came from the network leads only to the network:
///
/// | the list came from | its entries may name |
/// |---|---|
/// | http(s) | http(s) addresses only (a relative entry resolves to one) |
/// | the disk | local files and http(s) addresses |
///
/// Any other scheme (`file:` from the network, `data:`, `smb:`, `rtsp:`, …) is refused with a
/// reason. Loopback and private addresses stay allowed: players and home servers live there, and
/// a list on the network may already name any http(s) address.
public struct ListTrust: Sendable, Equatable {
    /// Where a list came from.
    public enum Origin: Sendable, Equatable {
        /// Fetched over http(s): written by whoever runs the server.
        case network
        /// Read from the disk (or given by the user).
        case local
    }

    /// Where the list came from.
    public let origin: Origin

    /// The entries a list at `list` may name: a list at an http(s) address is the network's,
    /// any other (a file) is local.
    public init(listAt list: URL) {
        origin = Self.isNetworkAddress(list) ? .network : .local
    }

    /// The trust of a list from `origin`.
    public init(_ origin: Origin) {
        self.origin = origin
    }

    /// The reason a list from the network gives for an entry that is not an http(s) address.
    public static let networkReason = "a list from the network may name only http(s) addresses"
    /// The reason a local list gives for an entry that is neither a file nor an http(s) address.
    public static let localReason = "Spool plays only files and http(s) addresses"

    /// Why the list may not name `entry` (a URL resolved against the list's own); nil when it may.
    public func refusal(of entry: URL) -> String? {
        if Self.isNetworkAddress(entry) {
            return entry.host?.isEmpty == false ? nil : "an http(s) address without a host"
        }
        switch origin {
        case .network: return Self.networkReason
        case .local: return entry.isFileURL ? nil : Self.localReason
        }
    }

    /// `entry` as a dropped entry of this list, when the list may not name it; shown as
    /// ``loggable(_:)`` shows it (no credentials, no query), as it goes to the log and to D-Bus.
    public func dropped(_ entry: URL) -> DroppedEntry? {
        refusal(of: entry).map { DroppedEntry(entry: loggable(entry), reason: $0) }
    }

    /// Whether `url` is an http or https address.
    public static func isNetworkAddress(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }
}

/// An entry of a list that is not played, and why.
public struct DroppedEntry: Sendable, Equatable, CustomStringConvertible {
    /// The longest part of an entry shown in a message.
    public static let shownLength = 200

    /// The entry as the list named it (resolved, without credentials or query), cut to
    /// ``shownLength`` characters.
    public let entry: String
    /// Why it is not played.
    public let reason: String

    /// A dropped `entry` with its `reason`.
    public init(entry: String, reason: String) {
        self.entry = entry.count > Self.shownLength ? entry.prefix(Self.shownLength) + "…" : entry
        self.reason = reason
    }

    /// "entry (reason)".
    public var description: String { "\(entry) (\(reason))" }
}
