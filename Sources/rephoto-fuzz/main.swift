// Fuzzing harnesses for the Swift parsers of untrusted text: calibration files, --intrinsics and attitude
// arguments, sequences (sequence.json + frames.csv), evaluation frames.csv, settings files. Built by
// scripts/fuzz with libFuzzer (-sanitize=fuzzer -D FUZZING); a plain build replays files instead:
//   rephoto-fuzz HARNESS FILE...      (exit 1 if any input crashes the parser or throws a non-RephotoError)
import Foundation

#if FUZZING
// libFuzzer's driver, entered explicitly: SwiftPM links this file's code as the program's main.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
               _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv) { fuzzOneInput($0, $1) })
#else
// Replays inputs, one harness over files.
let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let harness = harnesses[name] else {
    FileHandle.standardError.write(Data("usage: rephoto-fuzz HARNESS FILE...  (harnesses: \(harnesses.keys.sorted().joined(separator: ", ")))\n".utf8))
    exit(2)
}
var failed = false
for file in arguments.dropFirst() {
    guard let data = FileManager.default.contents(atPath: file) else { continue }
    if !check(harness, data) { failed = true; print("FAIL \(file)") }
}
exit(failed ? 1 : 0)
#endif
