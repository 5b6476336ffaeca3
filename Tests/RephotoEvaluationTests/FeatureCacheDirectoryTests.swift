import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
import RephotoEvaluation

/// Features kept on disk come back identical, under their own settings only, and a damaged file is a miss.
@Suite struct FeatureCacheDirectoryTests {
    @Test func roundTripSettingsAndDamage() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: try Fixtures.sample("graf1.png")))
        let folder = try Scratch.directory()
        let disk = try FeatureCacheDirectory(folder)
        let image = try Image(data: bytes, grayscale: true)
        let features = try Features(image: image, config: FeatureConfig())
        #expect(disk.features(bytes: bytes, config: FeatureConfig()) == nil)
        disk.store(features, bytes: bytes, config: FeatureConfig())

        let read = try #require(disk.features(bytes: bytes, config: FeatureConfig()))
        #expect(read.keypoints.map(\.point) == features.keypoints.map(\.point))
        #expect(try read.serialized() == features.serialized())
        #expect(read.detectMilliseconds == features.detectMilliseconds && read.detectMilliseconds > 0)
        var orb = FeatureConfig()
        orb.detector = .orb
        #expect(disk.features(bytes: bytes, config: orb) == nil)
        #expect(disk.features(bytes: bytes + Data([0]), config: FeatureConfig()) == nil)

        // Cut short: a miss, and the next store writes it whole again.
        let files = try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".features") }
        let file = folder.appendingPathComponent(try #require(files.first))
        #expect(files.count == 1)
        let whole = try Data(contentsOf: file)
        try whole.prefix(whole.count / 2).write(to: file)
        #expect(disk.features(bytes: bytes, config: FeatureConfig()) == nil)
        disk.store(features, bytes: bytes, config: FeatureConfig())
        #expect(try Data(contentsOf: file) == whole)

        // One byte changed inside the features (the length kept): a miss, never a wrong answer.
        var flipped = whole
        flipped[flipped.count - 100] ^= 0x40
        try flipped.write(to: file)
        #expect(disk.features(bytes: bytes, config: FeatureConfig()) == nil)
        // Larger than any features file: a miss, not read into memory.
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(FeatureCacheDirectory.maxFileBytes) + 1)
        try handle.close()
        #expect(disk.features(bytes: bytes, config: FeatureConfig()) == nil)
        // A FIFO in the file's place: a miss at once, not a read that waits for a writer forever.
        try FileManager.default.removeItem(at: file)
        #expect(mkfifo(file.path, 0o600) == 0)
        #expect(disk.features(bytes: bytes, config: FeatureConfig()) == nil)
        disk.store(features, bytes: bytes, config: FeatureConfig())
        #expect(try Data(contentsOf: file) == whole)

        // A killed run's temporary file is removed once it is an hour old; a live one is left alone.
        let stale = file.deletingLastPathComponent().appendingPathComponent(".stale.tmp")
        let live = file.deletingLastPathComponent().appendingPathComponent(".live.tmp")
        for url in [stale, live] { try Data("x".utf8).write(to: url) }
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: stale.path)
        _ = try FeatureCacheDirectory(folder)
        #expect(!FileManager.default.fileExists(atPath: stale.path) && FileManager.default.fileExists(atPath: live.path))

        // A cache in memory over it detects nothing the folder holds.
        let cache = FeatureCache(disk: disk)
        let entry = try cache.entry(bytes: bytes, config: FeatureConfig(), decode: { try Image(data: bytes, grayscale: true) },
                                    detect: { _ in Issue.record("detected again"); return features })
        #expect(try entry.features.serialized() == features.serialized())
        #expect(cache.counts == (detections: 0, reuses: 0, loaded: 1))

        let notAFolder = try Fixtures.temporaryFile("cache", Data("x".utf8))
        #expect(throws: RephotoError.self) { try FeatureCacheDirectory(URL(fileURLWithPath: notAFolder)) }
    }
}
