import Fetcher

/// The values the planner takes and returns.
extension DownloadPlanner {
    /// A transfer as the planner knows it; `key` is the planner's own name for it.
    public struct Transfer: Sendable, Equatable {
        /// The planner's name for the transfer (the executor maps it to the fetcher's).
        public let key: Int
        /// The next byte it will deliver.
        public var next: Int64
        /// Where it stops (exclusive); nil runs to the end of the resource.
        public var end: Int64?
        /// What it is for.
        public var role: Role
        /// Its measured bytes per second, once it has delivered enough to tell.
        public var rate: Double?

        /// Whether it will deliver `offset` after at most `limit` more bytes.
        func reaches(_ offset: Int64, within limit: Int64) -> Bool {
            next <= offset && offset - next <= limit && end.map { offset < $0 } ?? true
        }
    }

    /// What a transfer is for.
    public enum Role: Sendable, Equatable {
        /// The download playback follows.
        case main
        /// A short request for a probe read.
        case probe
        /// Set aside by a seek: paused, resumed when playback comes back to it.
        case parked
    }

    /// What the planner knows about the resource.
    public struct Resource: Sendable, Equatable {
        /// The total length, when known.
        public var length: Int64?
        /// Whether the origin serves byte ranges.
        public var rangesSupported: Bool
        /// Creates the facts.
        public init(length: Int64?, rangesSupported: Bool) {
            self.length = length
            self.rangesSupported = rangesSupported
        }
    }

    /// A read the decoder makes.
    public struct Read: Sendable, Equatable {
        /// The first byte wanted.
        public var offset: Int64
        /// The fewest bytes that make a useful answer (the rest of the resource when less).
        public var minLength: Int
        /// The most bytes wanted.
        public var maxLength: Int
        /// Creates a read; `minLength` defaults to all of it.
        public init(offset: Int64, maxLength: Int, minLength: Int? = nil) {
            self.offset = offset
            self.maxLength = max(1, maxLength)
            self.minLength = max(1, min(minLength ?? maxLength, maxLength))
        }
    }

    /// The answer to a read.
    public enum ReadAnswer: Sendable, Equatable {
        /// This many bytes are here from the read's offset: return them.
        case serve(Int)
        /// Not here yet; the reader is woken when they may be (``Effects/wakeReader``).
        case wait
        /// The offset is at or past the end.
        case endOfStream
    }

    /// Something the executor does for the planner.
    public enum Action: Sendable, Equatable {
        /// Start a request for `[from, to)` (`to` nil: to the end) under `key`.
        case start(key: Int, from: Int64, to: Int64?, priority: FetchPriority)
        /// Start the opening request under `key`: `[0, to)` when the origin serves ranges of a
        /// known length, else its whole body (``Fetcher/RangeRequest/wholeBodyUnlessRanged``).
        case startHead(key: Int, to: Int64, priority: FetchPriority)
        /// Start a request for the last `length` bytes of a resource whose length is not known
        /// yet (`Range: bytes=-N`), under `key`: the planner learns where they start from the
        /// first response (``DownloadPlanner/learn(_:cached:)``).
        case startLast(key: Int, length: Int64, priority: FetchPriority)
        /// Cancel the transfer.
        case cancel(key: Int)
        /// Change the transfer's priority (the fetcher pauses lower ones while higher receive).
        case setPriority(key: Int, FetchPriority)
        /// Call ``seekIntervalEnded(cached:now:)`` after this long.
        case scheduleSeek(after: Duration)
    }

    /// The outcome of an event: actions, and whether the waiting reader should be woken.
    public struct Effects: Sendable, Equatable {
        /// What to do, in order.
        public var actions: [Action] = []
        /// Whether the pending reader should try again.
        public var wakeReader = false
        /// Creates effects.
        public init(actions: [Action] = [], wakeReader: Bool = false) {
            self.actions = actions
            self.wakeReader = wakeReader
        }
    }
}
