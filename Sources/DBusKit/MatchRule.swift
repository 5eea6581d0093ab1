/// A parsed D-Bus match rule, used to route the signals the bus delivers to
/// the streams whose rule they match (the bus sends one copy for all rules).
struct MatchRule: Sendable {
    private(set) var fields: [String: String] = [:]

    /// Parses `key='value',key2='value2'`; nil when malformed or when it uses an unknown key.
    init?(_ rule: String) {
        var characters = Substring(rule)
        while !characters.isEmpty {
            guard let equals = characters.firstIndex(of: "=") else { return nil }
            let key = characters[..<equals].trimmingPrefix(while: { $0 == " " })
            characters = characters[characters.index(after: equals)...]
            var value = ""
            while let next = characters.first, next != "," {
                characters.removeFirst()
                if next == "'" {
                    guard let close = characters.firstIndex(of: "'") else { return nil }
                    value += characters[..<close]
                    characters = characters[characters.index(after: close)...]
                } else if next == "\\", characters.first == "'" {
                    value += "'"
                    characters.removeFirst()
                } else {
                    value.append(next)
                }
            }
            if !characters.isEmpty { characters.removeFirst() }
            guard MatchRule.isKnownKey(key) else { return nil }
            fields[String(key)] = value
        }
    }

    private static func isKnownKey(_ key: Substring) -> Bool {
        let plain: Set<Substring> = [
            "type", "sender", "interface", "member", "path", "path_namespace", "destination", "eavesdrop",
            "arg0namespace",
        ]
        if plain.contains(key) { return true }
        guard key.hasPrefix("arg") else { return false }
        var digits = key.dropFirst(3)
        if digits.hasSuffix("path") { digits = digits.dropLast(4) }
        guard let index = Int(digits), index < 64 else { return false }
        return true
    }

    /// Whether `signal`, a broadcast, matches. A well-known `sender` other than
    /// the bus itself cannot be resolved locally and is accepted: the bus checked
    /// who owns it before delivering a broadcast for this rule.
    func matches(_ signal: DBusSignalMessage) -> Bool {
        matchesHeader(sender: signal.sender, path: signal.path, interface: signal.interface, member: signal.member)
            && fields.allSatisfy { key, value in
                Self.isHeaderKey(key) || matches(argumentKey: key, value: value, signal)
            }
    }

    /// Whether a signal with these header fields can match, judged on every key
    /// but the argument ones: what a receiver checks before it reads a body. A
    /// `unicast` signal never matches a well-known `sender`: the bus delivers
    /// those whatever the rules say, so nobody checked that the sender owns the name.
    func matchesHeader(sender: String?, path: String, interface: String, member: String, unicast: Bool = false)
        -> Bool
    {
        fields.allSatisfy { key, value in
            switch key {
            case "type": value == "signal"
            case "sender" where value.hasPrefix(":") || value == "org.freedesktop.DBus": sender == value
            case "sender": !unicast
            case "interface": interface == value
            case "member": member == value
            case "path": path == value
            case "path_namespace": value == "/" || path == value || path.hasPrefix(value + "/")
            default: true
            }
        }
    }

    private static func isHeaderKey(_ key: String) -> Bool { !key.hasPrefix("arg") }

    private func matches(argumentKey key: String, value: String, _ signal: DBusSignalMessage) -> Bool {
        switch key {
        case "arg0namespace":
            guard let first = signal.arguments.first?.stringValue else { return false }
            return first == value || first.hasPrefix(value + ".")
        default:
            let isPath = key.hasSuffix("path")
            let index = Int(key.dropFirst(3).dropLast(isPath ? 4 : 0)) ?? 0
            guard index < signal.arguments.count else { return false }
            let argument = signal.arguments[index]
            if !isPath { return argument.stringValue == value }
            guard let text = argument.stringValue ?? argument.objectPathValue else { return false }
            return text == value || (value.hasSuffix("/") && text.hasPrefix(value))
                || (text.hasSuffix("/") && value.hasPrefix(text))
        }
    }
}
