import MPRIS

/// The bus name a starting daemon asks for, decided before it opens or restores anything:
/// a daemon that cannot have the name must leave the saved session as the running one keeps it.
enum BusNameChoice: Equatable {
    /// Ask for this name.
    case take(String)
    /// Stop with this one-line reason (exit status 2).
    case refuse(String)

    /// The choice when the MPRIS name is (`owned`) or is not taken; `instance` is `--instance`,
    /// which falls back to a name of this process's own (`pid`).
    static func choose(owned: Bool, instance: Bool, pid: Int32) -> BusNameChoice {
        guard owned else { return .take(MPRISService.busName) }
        guard instance else { return .refuse(refusal) }
        return .take(MPRISService.busName + ".instance\(pid)")
    }

    /// What a second daemon without `--instance` says.
    static let refusal =
        "another Spool daemon already owns \(MPRISService.busName) on this bus; stop it first, or start this one with --instance"
}
