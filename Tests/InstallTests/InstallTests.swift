import DBusKit
import Foundation
import FoundationXML
import TestSupport
import Testing

/// The files `make install-files` writes, relative to `$(DESTDIR)$(PREFIX)`.
let installedFiles = [
    "bin/spool",
    "share/dbus-1/services/org.mpris.MediaPlayer2.spool.service",
    "lib/systemd/user/spool.service",
    "share/applications/spool.desktop",
    "share/icons/hicolor/scalable/apps/spool.svg",
    "share/bash-completion/completions/spool",
    "share/zsh/site-functions/_spool",
    "share/fish/vendor_completions.d/spool.fish",
    "share/man/man1/spool.1",
]

/// The generated files among them, each with the `spool` arguments that print it.
let generatedFiles = [
    "share/bash-completion/completions/spool": ["completions", "bash"],
    "share/zsh/site-functions/_spool": ["completions", "zsh"],
    "share/fish/vendor_completions.d/spool.fish": ["completions", "fish"],
    "share/man/man1/spool.1": ["manpage"],
]

/// Runs `make TARGET VARIABLE=VALUE…` in the repository (the already built debug binary stands
/// in for the release one, so nothing is compiled).
func make(_ target: String, _ variables: [String: String]) throws -> CommandResult {
    let arguments = ["-C", repositoryRoot.path, target] + variables.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }
    let result = try runCommand("make", arguments, timeout: 60)
    #expect(result.status == 0, "make \(target): \(result.stderr)")
    return result
}

/// Every file (not folder) under `directory`, relative to it.
func filesBelow(_ directory: URL) -> [String] {
    let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isDirectoryKey])
    return (enumerator?.allObjects as? [URL] ?? [])
        .filter { (try? $0.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) != true }
        .map { String($0.path.dropFirst(directory.path.count + 1)) }
        .sorted()
}

/// The value of the first `key=` line of an ini-style file.
func iniValue(_ key: String, in text: String) -> String? {
    text.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
}

@Suite("make install and D-Bus activation", .serialized)
struct InstallTests {
    @Test func installFilesPutsEveryFileInPlaceAndUninstallRemovesExactlyThose() throws {
        let stage = try TemporaryDirectory(prefix: "spool-destdir")
        let binary = try spoolExecutable()
        let variables = ["DESTDIR": stage.path, "PREFIX": "/usr", "BINARY": binary]
        _ = try make("install-files", variables)
        let root = stage.file("usr")
        #expect(filesBelow(stage.url) == installedFiles.map { "usr/" + $0 }.sorted())

        let installed = root.appendingPathComponent("bin/spool")
        #expect(FileManager.default.isExecutableFile(atPath: installed.path))
        #expect(try Data(contentsOf: installed) == Data(contentsOf: URL(fileURLWithPath: binary)))

        let activation = try String(
            contentsOf: root.appendingPathComponent("share/dbus-1/services/org.mpris.MediaPlayer2.spool.service"),
            encoding: .utf8)
        #expect(iniValue("Name", in: activation) == "org.mpris.MediaPlayer2.spool")
        #expect(iniValue("Exec", in: activation) == "/usr/bin/spool daemon")
        #expect(iniValue("SystemdService", in: activation) == "spool.service")

        let unit = try String(
            contentsOf: root.appendingPathComponent("lib/systemd/user/spool.service"), encoding: .utf8)
        #expect(iniValue("Type", in: unit) == "dbus")
        #expect(iniValue("BusName", in: unit) == "org.mpris.MediaPlayer2.spool")
        #expect(iniValue("ExecStart", in: unit) == "/usr/bin/spool daemon")
        #expect(iniValue("Restart", in: unit) == "on-failure")

        let desktop = root.appendingPathComponent("share/applications/spool.desktop")
        #expect(iniValue("Exec", in: try String(contentsOf: desktop, encoding: .utf8)) == "/usr/bin/spool daemon")
        let validation = try runCommand("desktop-file-validate", [desktop.path])
        #expect(validation.status == 0 && validation.stdout.isEmpty, "\(validation.stdout)\(validation.stderr)")

        let icon = XMLParser(contentsOf: root.appendingPathComponent("share/icons/hicolor/scalable/apps/spool.svg"))
        #expect(icon?.parse() == true, "the icon is not well-formed XML")

        // Completions and the man page are what the binary prints, and each passes its checker.
        for (file, arguments) in generatedFiles {
            let path = root.appendingPathComponent(file).path
            let printed = try runCommand(binary, arguments)
            #expect(printed.status == 0 && !printed.stdout.isEmpty, "spool \(arguments): \(printed.stderr)")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == printed.stdout, "\(file)")
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o644, "\(file)")
        }
        let bash = try runCommand(
            "bash", ["-n", root.appendingPathComponent("share/bash-completion/completions/spool").path])
        #expect(bash.status == 0 && bash.stderr.isEmpty, "\(bash.stderr)")
        var manEnvironment = ProcessInfo.processInfo.environment
        manEnvironment["MANWIDTH"] = "80"
        let man = try runCommand(
            "man", ["--warnings", "-l", root.appendingPathComponent("share/man/man1/spool.1").path],
            environment: manEnvironment)
        #expect(man.status == 0 && man.stderr.isEmpty && man.stdout.contains("spool daemon"), "\(man.stderr)")

        for file in installedFiles where file != "bin/spool" {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.split(separator: "\n").contains { !$0.hasPrefix("#") && $0.contains("@bindir@") }, "\(file)")
        }

        _ = try make("uninstall", variables)
        #expect(filesBelow(stage.url).isEmpty, "uninstall left \(filesBelow(stage.url))")
    }

    /// `systemd-analyze verify` checks that ExecStart exists, so this installs under a real
    /// temporary PREFIX (no DESTDIR) and verifies the unit as installed, for the user manager.
    @Test(
        .enabled(
            if: (try? executablePath("systemd-analyze")) != nil,
            "systemd-analyze is not installed: the unit is not verified"))
    func theInstalledUserUnitPassesSystemdAnalyzeVerify() throws {
        let prefix = try TemporaryDirectory(prefix: "spool-prefix")
        let runtime = try TemporaryDirectory(prefix: "spool-runtime")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: runtime.path)
        _ = try make("install-files", ["PREFIX": prefix.path, "BINARY": try spoolExecutable()])
        let unit = prefix.file("lib/systemd/user/spool.service")
        #expect(
            iniValue("ExecStart", in: try String(contentsOf: unit, encoding: .utf8))
                == "\(prefix.path)/bin/spool daemon")
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime.path
        let verify = try runCommand("systemd-analyze", ["--user", "verify", unit.path], environment: environment)
        // verify exits 0 even for unknown keys, which it reports on stderr: both must be clean.
        #expect(
            verify.status == 0 && verify.stderr.isEmpty && verify.stdout.isEmpty, "\(verify.stdout)\(verify.stderr)")
    }

    @Test func aCallToTheBusNameStartsTheDaemonThroughItsActivationFile() async throws {
        let activatable = try ActivatableBus()
        defer { withExtendedLifetime(activatable) {} }  // its folders hold the activation file and the daemon's home
        let bus = activatable.bus
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        #expect(try await client.nameHasOwner(busName) == false)

        let reply = try await client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("PlaybackStatus")],
            timeout: .seconds(20))
        #expect("\(reply)".contains("Stopped"), "\(reply)")
        #expect(try await client.nameHasOwner(busName))
        let pid = try await client.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "GetConnectionUnixProcessID", arguments: [.string(busName)])

        // Stop it: Quit over MPRIS, and make sure the process is gone.
        _ = try await client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2", method: "Quit")
        let processID = try #require(pid.first?.uint32Value.map { pid_t($0) })
        let exited = await eventually(timeout: 10) { kill(processID, 0) != 0 }
        if !exited { kill(processID, SIGKILL) }
        #expect(exited, "the activated daemon did not quit; bus log:\n\(bus.daemon.standardError)")
        #expect(try await client.nameHasOwner(busName) == false)
    }
}

let busName = "org.mpris.MediaPlayer2.spool"
