import FoundationEssentials

/// The headers of a response that decide whether, and for how long, a private cache may use it
/// without asking the origin (RFC 9111), verbatim as the origin sent them.
public struct CachingHeaders: Sendable, Equatable {
    /// `Cache-Control`, all field lines joined with commas.
    public var cacheControl: String?
    /// `Expires`.
    public var expires: String?
    /// `Date`: when the origin generated the response.
    public var date: String?
    /// `Age`: seconds the response spent in caches on the way.
    public var age: String?
    /// `Vary`: the request headers the response was selected by.
    public var vary: String?
    /// `Last-Modified`, for the heuristic freshness of a response without an explicit one.
    public var lastModified: String?

    /// Creates the set; every header is optional.
    public init(
        cacheControl: String? = nil, expires: String? = nil, date: String? = nil, age: String? = nil,
        vary: String? = nil, lastModified: String? = nil
    ) {
        self.cacheControl = cacheControl
        self.expires = expires
        self.date = date
        self.age = age
        self.vary = vary
        self.lastModified = lastModified
    }
}

/// How a stored response may be reused, decided once when it arrives: until when it is fresh,
/// and whether it must be checked with the origin before a use anyway.
public struct Freshness: Sendable, Hashable {
    /// The wall-clock time until which the response may be used with no request at all; nil
    /// when it is stale from the start (no lifetime, or one its age already used up).
    public var freshUntil: Date?
    /// `no-cache`: checked with the origin before every use, fresh or not.
    public var revalidatesEveryUse: Bool
    /// `must-revalidate` (or `no-cache`): once stale, used only after the origin confirmed it.
    public var mustRevalidate: Bool

    /// Creates the value.
    public init(freshUntil: Date? = nil, revalidatesEveryUse: Bool = false, mustRevalidate: Bool = false) {
        self.freshUntil = freshUntil
        self.revalidatesEveryUse = revalidatesEveryUse
        self.mustRevalidate = mustRevalidate
    }

    /// Nothing known: stale, revalidated by the player's own interval.
    public static let unknown = Freshness()

    /// Whether the response may be used at `now` without a request.
    public func isFresh(at now: Date) -> Bool {
        guard !revalidatesEveryUse, let freshUntil else { return false }
        return now < freshUntil
    }

    /// Whether a use at `now` must wait for the origin's answer (no-cache, or stale under
    /// must-revalidate), rather than start from the stored copy while it is asked.
    public func needsAnswerBeforeUse(at now: Date) -> Bool {
        revalidatesEveryUse || (mustRevalidate && !isFresh(at: now))
    }
}

/// What a private cache does with a response, by RFC 9111: where its bytes may go and how long
/// they stay fresh.
public enum CachingDecision: Sendable, Equatable {
    /// The bytes may be kept on disk, fresh as said.
    case store(Freshness)
    /// The bytes may be kept only in memory while playing (`no-store`, `Vary: *`).
    case memoryOnly(reason: String)
}

/// The freshness rules of RFC 9111 for a private cache, as one pure function.
public enum HTTPFreshness {
    /// The longest heuristic lifetime given to a response that names only its Last-Modified
    /// date (§4.2.2 leaves the cap to the cache; a day, as common browsers use).
    public static let heuristicCap: TimeInterval = 24 * 3600
    /// The share of a response's age since its last change that its heuristic lifetime is
    /// (the 10 % that §4.2.2 suggests).
    public static let heuristicFraction = 0.1

    /// Statuses that may be given a heuristic lifetime (§4.2.2, RFC 9110 §15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Decides for a response of `status` with `headers`, whose request left at `requestTime`
    /// and whose head arrived at `responseTime` (both on the wall clock).
    public static func decide(
        _ headers: CachingHeaders, status: Int, requestTime: Date, responseTime: Date
    ) -> CachingDecision {
        let directives = CacheDirectives(headers.cacheControl)
        if directives.has("no-store") { return .memoryOnly(reason: "the origin said no-store") }
        if let vary = headers.vary, VaryHeader.names(vary) == nil {
            return .memoryOnly(reason: "the response varies on everything (Vary: *)")
        }
        let noCache = directives.has("no-cache")
        let mustRevalidate = noCache || directives.has("must-revalidate")
        let date = headers.date.flatMap(HTTPDates.parse)
        // §4.2.3: the age it had on arrival, from Age and from the Date it carries.
        let ageValue = headers.age.flatMap { TimeInterval($0.trimmingWhitespace()) }.map { max(0, $0) } ?? 0
        let apparentAge = date.map { max(0, responseTime.timeIntervalSince($0)) } ?? 0
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let initialAge = max(apparentAge, ageValue + responseDelay)
        let lifetime = freshnessLifetime(directives, headers, date: date ?? responseTime, status: status)
        let freshUntil = lifetime.flatMap { $0 > initialAge ? responseTime.addingTimeInterval($0 - initialAge) : nil }
        return .store(Freshness(freshUntil: freshUntil, revalidatesEveryUse: noCache, mustRevalidate: mustRevalidate))
    }

    /// §4.2.1: max-age (s-maxage is for shared caches), else Expires minus Date, else the
    /// heuristic of §4.2.2; nil when there is none. An Expires that does not parse (`0`) has
    /// already expired.
    static func freshnessLifetime(
        _ directives: CacheDirectives, _ headers: CachingHeaders, date: Date, status: Int
    ) -> TimeInterval? {
        if let maxAge = directives.value("max-age") {
            return TimeInterval(maxAge).map { max(0, $0) } ?? 0  // an unreadable max-age: stale
        }
        if let expires = headers.expires {
            guard let expiry = HTTPDates.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        guard heuristicallyCacheable.contains(status) || directives.has("public"),
            let lastModified = headers.lastModified.flatMap(HTTPDates.parse)
        else { return nil }
        return min(heuristicCap, max(0, date.timeIntervalSince(lastModified)) * heuristicFraction)
    }

    /// The freshness a 304 gives the stored response it confirms (§4.3.4: its headers replace
    /// the stored ones). A 304 that says nothing about freshness keeps `stored`'s rules and
    /// lifetime renewed as if the stored response had arrived again.
    public static func refreshed(
        _ stored: Freshness, by headers: CachingHeaders, requestTime: Date, responseTime: Date
    ) -> Freshness {
        let said = headers.cacheControl != nil || headers.expires != nil
        guard said else { return stored }
        guard
            case .store(let freshness) = decide(
                headers, status: 200, requestTime: requestTime, responseTime: responseTime)
        else { return stored }
        return freshness
    }
}

/// The directives of a `Cache-Control` value (RFC 9111 §5.2): names compared without case,
/// arguments with their quotes removed; the first occurrence of a directive counts.
struct CacheDirectives {
    private var values: [String: String?] = [:]

    init(_ header: String?) {
        guard let header else { return }
        for part in splitOutsideQuotes(header) {
            let item = part.trimmingWhitespace()
            guard !item.isEmpty else { continue }
            let pieces = item.split(separator: "=", maxSplits: 1)
            let name = pieces[0].trimmingWhitespace().lowercased()
            guard values[name] == nil else { continue }
            var argument = pieces.count > 1 ? pieces[1].trimmingWhitespace() : nil
            if let quoted = argument, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                argument = String(quoted.dropFirst().dropLast())
            }
            values[name] = .some(argument)
        }
    }

    /// Whether the directive is present (with an argument or without).
    func has(_ name: String) -> Bool { values[name] != nil }

    /// The directive's argument; nil when absent or given without one.
    func value(_ name: String) -> String? { values[name] ?? nil }
}

/// Splits at commas that are not inside a quoted string (`no-cache="a, b", max-age=5`).
private func splitOutsideQuotes(_ text: String) -> [Substring] {
    var parts: [Substring] = []
    var start = text.startIndex
    var quoted = false
    for index in text.indices {
        let character = text[index]
        if character == "\"" { quoted.toggle() }
        if character == ",", !quoted {
            parts.append(text[start..<index])
            start = text.index(after: index)
        }
    }
    parts.append(text[start...])
    return parts
}

/// The `Vary` header (RFC 9110 §12.5.5).
public enum VaryHeader {
    /// The request header names it lists, lowercased and sorted; nil for `*` (varies on
    /// everything a cache cannot see).
    public static func names(_ value: String) -> [String]? {
        let names = value.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }.filter { !$0.isEmpty }
        if names.contains("*") { return nil }
        return Array(Set(names)).sorted()
    }

    /// The selecting headers of a response that varies by `value`: each listed name with the
    /// value the request carried (`requestHeader` answers nil for a header not sent), one
    /// `name: value` line each. A stored response serves only a request whose line matches
    /// (§4.1). Nil for `*`.
    public static func selectingHeaders(_ value: String, requestHeader: (String) -> String?) -> String? {
        names(value).map { names in names.map { "\($0): \(requestHeader($0) ?? "")" }.joined(separator: "\n") }
    }
}

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, names in any
/// case), and the obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`) forms a recipient must accept. Parsed by hand: DateFormatter
/// needs Foundation and ICU, which the daemon does not load.
public enum HTTPDates {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longWeekdays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// The date `text` names, or nil for any other form or an impossible date.
    public static func parse(_ text: String) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false).map { $0.lowercased() }
        if parts.count == 6, parts[0].hasSuffix(","), weekdays.contains(String(parts[0].dropLast())),
            parts[5] == "gmt", parts[1].count <= 2
        {
            return date(day: parts[1], month: parts[2], year: parts[3], clock: parts[4])
        }
        if parts.count == 4, parts[0].hasSuffix(","), longWeekdays.contains(String(parts[0].dropLast())),
            parts[3] == "gmt"
        {
            let pieces = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard pieces.count == 3, pieces[2].count == 2, let short = Int(pieces[2]) else { return nil }
            // Two-digit years: RFC 9110 reads one more than 50 years ahead as the past century.
            let year = String(short < 70 ? 2000 + short : 1900 + short)
            return date(day: pieces[0], month: pieces[1], year: year, clock: parts[2])
        }
        let words = parts.filter { !$0.isEmpty }
        if words.count == 5, weekdays.contains(words[0]) {
            return date(day: words[2], month: words[1], year: words[4], clock: words[3])
        }
        return nil
    }

    private static func date(day: String, month: String, year: String, clock: String) -> Date? {
        guard let day = Int(day), let month = months.firstIndex(of: month), year.count == 4, let year = Int(year)
        else { return nil }
        let time = clock.split(separator: ":", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard time.count == 3, (0..<24).contains(time[0]), (0..<60).contains(time[1]), (0..<60).contains(time[2])
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let components = DateComponents(
            year: year, month: month + 1, day: day, hour: time[0], minute: time[1], second: time[2])
        guard components.isValidDate(in: calendar) else { return nil }
        return calendar.date(from: components)
    }
}
