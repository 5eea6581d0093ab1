/// Spool's version, shown by `spool version` and sent in the User-Agent.
enum SpoolVersion {
    static let string = "0.1.0"
}
