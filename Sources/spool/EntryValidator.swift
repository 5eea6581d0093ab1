// RangeCache and Fetcher both name a type `Validator`: this file sees only the cache's,
// so the preloader can name both unambiguously (see HTTPValidator.swift).
import RangeCache

/// The cache's validator (what an entry's bytes are bound to).
typealias EntryValidator = Validator
