// See HTTPValidators.swift: this file sees only the cache's validator type.
import RangeCache

/// The cache's validator (what an entry is bound to).
typealias CacheValidator = Validator
