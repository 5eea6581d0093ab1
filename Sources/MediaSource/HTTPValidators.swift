// Fetcher's and RangeCache's validator types share a name; this file sees only
// the Fetcher's, so the conversion can name both unambiguously.
import Fetcher

/// The fetcher's validator (If-Range / If-None-Match material).
typealias HTTPValidator = Validator
