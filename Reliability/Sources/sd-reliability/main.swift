// sd-reliability: the reliability suite of SecureDictionary.
//
//   sd-reliability [--full] [--json FILE] [--only 1,5,…] [--root DIR]
//
// Runs the scenarios, prints one table row per measured figure (scenario, check, target,
// measured, PASS/FAIL) on stdout, progress on stderr, and exits 1 when a figure misses its
// target. Run it through scripts/reliability, which builds it and starts the private
// gnome-keyring it needs. `sd-reliability worker …` (hidden) is the same executable in the
// role of a second process: hostile cases, crashes and kills happen there, not here.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "worker" {
    Worker.main(Array(arguments.dropFirst()))
} else {
    exit(Runner.main(arguments))
}
