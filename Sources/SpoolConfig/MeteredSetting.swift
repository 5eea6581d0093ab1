/// Whether Spool treats the network as metered: `auto` follows NetworkManager (no
/// NetworkManager means not metered), `yes` and `no` decide whatever it says.
public enum MeteredSetting: String, ConfigChoice {
    /// Follow NetworkManager's `Metered` property.
    case auto
    /// Always metered.
    case yes
    /// Never metered.
    case no

    /// Names the setting in messages.
    public static let choiceName = "metered setting"

    /// The decision this setting forces: nil for `auto` (NetworkManager decides).
    public var forced: Bool? {
        switch self {
        case .auto: nil
        case .yes: true
        case .no: false
        }
    }
}
