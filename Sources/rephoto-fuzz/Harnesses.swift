import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit

/// Every harness: bytes in, nothing out. A RephotoError is the expected refusal; anything else is a finding.
let harnesses: [String: @Sendable (Data) throws -> Void] = [
    "calibration": { _ = try CameraIntrinsics.parse($0, path: "fuzz.yml") },
    "intrinsics": { _ = try CameraIntrinsics(parsing: String(decoding: $0, as: UTF8.self)) },
    "attitude": { data in
        let text = String(decoding: data, as: UTF8.self)
        for frame in AttitudeReferenceFrame.allCases { _ = try? Attitude(parsing: text, frame: frame) }
        _ = try Attitude(parsing: text)
    },
    "sequence": { data in
        // One input holds both files: sequence.json, a NUL byte, frames.csv.
        let parts = data.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
        _ = try FrameSequence.parse(manifest: Data(parts[0]), frames: parts.count > 1 ? Data(parts[1]) : Data(),
                                    directory: URL(fileURLWithPath: "/fuzz"))
    },
    "csv": { _ = try EvaluationRow.parse(String(decoding: $0, as: UTF8.self), path: "frames.csv") },
    "config": { data in
        _ = try? PipelineConfig.decode(data, yaml: true)
        _ = try PipelineConfig.decode(data, yaml: false)
    },
]

func check(_ harness: @Sendable (Data) throws -> Void, _ data: Data) -> Bool {
    do {
        try harness(data)
    } catch is RephotoError {
    } catch {
        FileHandle.standardError.write(Data("rephoto-fuzz: not a RephotoError: \(error)\n".utf8))
        return false
    }
    return true
}

#if FUZZING
/// libFuzzer's entry: its own main (linked by -sanitize=fuzzer) calls this for every input; the harness is
/// named by REPHOTO_FUZZ_HARNESS. Globals here, unlike main.swift's, are initialised on first use.
let fuzzTarget: @Sendable (Data) throws -> Void = {
    guard let name = ProcessInfo.processInfo.environment["REPHOTO_FUZZ_HARNESS"], let harness = harnesses[name] else {
        FileHandle.standardError.write(Data("rephoto-fuzz: set REPHOTO_FUZZ_HARNESS to one of \(harnesses.keys.sorted().joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return harness
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    if !check(fuzzTarget, data) { abort() }
    return 0
}
#endif
