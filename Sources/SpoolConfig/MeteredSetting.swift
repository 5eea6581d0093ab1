/// Whether Spool treats the network as metered: `auto` follows NetworkManager (no
/// NetworkManager means not metered), `yes` and `no` decide whatever it says.
public enum MeteredSetting: String, ConfigValue, CaseIterable {
    /// Follow NetworkManager's `Metered` property.
    case auto
    /// Always metered.
    case yes
    /// Never metered.
    case no

    /// Parses `auto`, `yes` or `no` (any case).
    public init(configText text: String) throws(ConfigValueError) {
        guard let setting = MeteredSetting(rawValue: text.lowercased()) else {
            throw ConfigValueError("'\(text)' is not a metered setting; use auto, yes or no")
        }
        self = setting
    }

    /// `auto`, `yes` or `no`.
    public var configText: String { rawValue }

    /// The placeholder in `--help`.
    public static var placeholder: String { "auto|yes|no" }

    /// The decision this setting forces: nil for `auto` (NetworkManager decides).
    public var forced: Bool? {
        switch self {
        case .auto: nil
        case .yes: true
        case .no: false
        }
    }
}
