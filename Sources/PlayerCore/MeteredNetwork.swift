/// NetworkManager's global `Metered` property (`NMMetered`, a uint32 on
/// `/org/freedesktop/NetworkManager`): whether the primary connection's traffic is limited or
/// billed, as configured on the connection or guessed from its kind (a phone's hotspot, a modem).
public enum NetworkManagerMetered: UInt32, Sendable, Equatable, CaseIterable {
    /// NetworkManager does not know.
    case unknown = 0
    /// The connection profile says metered.
    case yes = 1
    /// The connection profile says not metered.
    case no = 2
    /// Guessed metered (a mobile broadband device, a DHCP hint).
    case guessYes = 3
    /// Guessed not metered.
    case guessNo = 4
}

/// Whether metered rules are in force: less preload and a read-ahead window, so playing
/// spends no more mobile data than listening needs. Pure, so every case is a table row.
public enum MeteredNetwork {
    /// The decision. `forced` is the user's `network.metered` (nil for `auto`, which follows
    /// NetworkManager); `reported` is NetworkManager's value, nil when it is not running. As
    /// NetworkManager's documentation advises, a guessed yes counts as yes and every other
    /// value (unknown included) as not metered, so a machine without NetworkManager is never
    /// held back.
    public static func inForce(forced: Bool?, reported: NetworkManagerMetered?) -> Bool {
        if let forced { return forced }
        switch reported {
        case .yes, .guessYes: return true
        case .no, .guessNo, .unknown, nil: return false
        }
    }

    /// NetworkManager's raw value read as `NMMetered`; a value it may add later counts as unknown.
    public static func reported(_ raw: UInt32) -> NetworkManagerMetered {
        NetworkManagerMetered(rawValue: raw) ?? .unknown
    }
}
