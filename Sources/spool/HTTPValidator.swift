// See EntryValidator.swift: this file sees only the fetcher's validator type.
import Fetcher

/// The fetcher's validator (If-Range material).
typealias RequestValidator = Validator
