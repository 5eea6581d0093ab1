import Foundation
import TestSupport
import Testing

/// Issue #5: the daemon imports FoundationEssentials, never Foundation, so that
/// libFoundation, FoundationInternationalization and the ICU data (several MiB
/// resident) are never loaded. One `import Foundation` in any module the
/// executable links brings them all back; this catches it.
@Suite("What the spool binary links")
struct LinkedLibrariesTests {
    @Test func spoolLinksFoundationEssentialsButNotFoundationOrICU() throws {
        let binary = try spoolExecutable()
        let result = try runCommand("ldd", [binary])
        #expect(result.status == 0, "ldd \(binary): \(result.stderr)")
        // Without this line a renamed library would make the check pass blindly.
        #expect(result.stdout.contains("libFoundationEssentials.so"), "\(result.stdout)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(
                !result.stdout.contains(library),
                "spool links \(library): a module of the executable imports Foundation instead of FoundationEssentials")
        }
    }
}
