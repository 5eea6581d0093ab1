import Glibc

/// Whether a connection to a URL's host could be made at all, as far as this machine can
/// tell: the loopback host always; any other host when an interface other than loopback is up,
/// running and has an address. A failed connection while this holds is the server's fault
/// (skip the track after a retry); while it does not, the network is down (wait for it).
public enum NetworkState {
    /// Whether `host` (nil: any) can be reached as far as the interfaces tell.
    public static func isUp(forHost host: String?) -> Bool {
        if let host, isLoopback(host) { return true }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return true }  // unknown: assume up
        defer { freeifaddrs(list) }
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            next = entry.pointee.ifa_next
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_RUNNING) != 0,
                flags & Int32(IFF_LOOPBACK) == 0, let address = entry.pointee.ifa_addr
            else { continue }
            let family = Int32(address.pointee.sa_family)
            if family == AF_INET || family == AF_INET6 { return true }
        }
        return false
    }

    /// Whether `host` names this machine: `localhost`, 127.0.0.0/8 or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().filter { $0 != "[" && $0 != "]" }
        return host == "localhost" || host.hasSuffix(".localhost") || host.hasPrefix("127.") || host == "::1"
    }
}
