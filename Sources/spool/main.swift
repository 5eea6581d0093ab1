import Dispatch
import Foundation
import SpoolLog

/// Writes one line to stderr (stdout is for results, and is block-buffered in pipes).
func complain(_ message: String) {
    FileHandle.standardError.write(Data("spool: \(message)\n".utf8))
}

let usage = """
    Usage: spool <command> [options]

    Commands:
      daemon      Run the player daemon on the D-Bus session bus (org.mpris.MediaPlayer2.spool)
      version     Print Spool's version
      help        Show this help

    Options of `spool daemon`:
      --audio-sink DESC   GStreamer sink description, e.g. "pulsesink" or "fakesink sync=true"
                          (default: $SPOOL_AUDIO_SINK, else the desktop's sound server)
      --log-level LEVEL   trace, debug, info, notice, warning or error (default: $SPOOL_LOG, else info)

    Play something with any MPRIS client, e.g.  playerctl -p spool open https://example.org/a.mp3

    """

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "help" : arguments.removeFirst()

switch command {
case "help", "--help", "-h":
    print(usage, terminator: "")
    exit(0)
case "version", "--version":
    print("spool \(SpoolVersion.string)")
    exit(0)
case "daemon":
    var options = DaemonOptions(audioSink: ProcessInfo.processInfo.environment["SPOOL_AUDIO_SINK"])
    while !arguments.isEmpty {
        let flag = arguments.removeFirst()
        switch flag {
        case "--audio-sink" where !arguments.isEmpty:
            options.audioSink = arguments.removeFirst()
        case "--log-level" where !arguments.isEmpty:
            let name = arguments.removeFirst()
            guard let level = LogLevel(name: name) else {
                complain("unknown log level '\(name)'; use trace, debug, info, notice, warning or error")
                exit(1)
            }
            Logger.minimumLevel = level
        case "--help", "-h":
            print(usage, terminator: "")
            exit(0)
        default:
            complain("unknown or incomplete option '\(flag)' for 'spool daemon'; see 'spool --help'")
            exit(1)
        }
    }
    if options.audioSink?.isEmpty == true { options.audioSink = nil }

    // Signals arrive as events on the main queue, never as handlers mid-operation.
    signal(SIGTERM, SIG_IGN)
    signal(SIGINT, SIG_IGN)
    signal(SIGPIPE, SIG_IGN)
    let daemon: Daemon
    do {
        daemon = try Daemon(options: options)
    } catch {
        complain("\(error)")
        exit(2)
    }
    let signalSources = [SIGTERM, SIGINT].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
        source.setEventHandler { daemon.stop(reason: number == SIGTERM ? "SIGTERM" : "SIGINT") }
        source.resume()
        return source
    }
    Task {
        do {
            try await daemon.start()
        } catch {
            complain("\(error)")
            exit(1)
        }
    }
    withExtendedLifetime(signalSources) { dispatchMain() }
default:
    complain("unknown command '\(command)'; see 'spool --help'")
    exit(1)
}
