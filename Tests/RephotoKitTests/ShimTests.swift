import RephotoTestSupport
import RephotoShim
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

/// The C boundary: OpenCV exceptions come back as status codes with a one-line message.
@Suite(.serialized) struct ShimTests {
    @Test func openCVAssertionBecomesAStatus() throws {
        let image = try Fixtures.image("graf1.png")
        var params = try FeatureConfig(detector: .orb).shimParameters()
        params.orb_scale_factor = 0.5  // bypasses Swift validation: OpenCV itself refuses it
        var out: OpaquePointer?
        var status = rp_status()
        let code = rp_features_detect(image.handle, &params, nil, &out, &status)
        #expect(code == Int32(RP_ERR_OPENCV.rawValue))
        #expect(out == nil)
        let message = withUnsafeBytes(of: &status.message) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        #expect(message.hasPrefix("OpenCV error"))
        #expect(!message.contains("\n"))
    }

    @Test func nonFinitePointsAreRefused() throws {
        var points = [Double](repeating: 1, count: 20)
        points[3] = .nan
        let pairs = Correspondences(matches: [], reference: stride(from: 0, to: 20, by: 2).map { Point2(x: points[$0], y: points[$0 + 1]) },
                                    current: (0..<10).map { Point2(x: Double($0), y: Double($0 * $0)) })
        let error = #expect(throws: RephotoError.self) { try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography) }
        #expect(error?.message == "reference point 1 is not finite")
    }

    @Test func unknownDetectorKindIsAnError() throws {
        let image = try Fixtures.image("graf1.png")
        var params = try FeatureConfig().shimParameters()
        params.kind = 9
        var out: OpaquePointer?
        var status = rp_status()
        #expect(rp_features_detect(image.handle, &params, nil, &out, &status) == Int32(RP_ERR_INVALID_ARGUMENT.rawValue))
    }

    private static func matches(_ call: (UnsafeMutablePointer<UnsafeMutablePointer<rp_match>?>, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<rp_status>) -> Int32) throws -> [[Int]] {
        var raw: UnsafeMutablePointer<rp_match>?
        var count: Int32 = 0
        var status = rp_status()
        guard call(&raw, &count, &status) == 0 else { throw RephotoError(.internal, "match failed") }
        defer { rp_buffer_free(raw) }
        return UnsafeBufferPointer(start: raw, count: Int(count)).map { [Int($0.reference_index), Int($0.current_index), Int($0.distance)] }
    }

    /// The index keeps its own reference to the features it was built from (the handle may be freed first), and
    /// matching through it honours the matcher and the mutual check, as rp_match_features does.
    @Test func matchIndexOutlivesItsFeaturesAndHonoursMatcherAndMutual() throws {
        let a = try Fixtures.image("graf1.png").resized(width: 400, height: 320)
        let current = try Features(image: try Fixtures.image("graf3.png").resized(width: 400, height: 320), config: FeatureConfig())
        var detector = try FeatureConfig().shimParameters()
        var reference: OpaquePointer?
        var status = rp_status()
        #expect(rp_features_detect(a.handle, &detector, nil, &reference, &status) == 0)
        var brute = try MatchConfig().shimParameters()
        var mutual = brute
        mutual.mutual = 1
        var flann = brute
        flann.matcher = Int32(RP_MATCHER_FLANN.rawValue)
        let expectedBrute = try Self.matches { rp_match_features(reference, current.handle, &brute, $0, $1, $2) }
        let expectedMutual = try Self.matches { rp_match_features(reference, current.handle, &mutual, $0, $1, $2) }
        let expectedFlann = try Self.matches { rp_match_features(reference, current.handle, &flann, $0, $1, $2) }
        #expect(expectedMutual.count < expectedBrute.count && expectedMutual.count > 20)

        var index: OpaquePointer?
        #expect(rp_match_index_create(reference, &flann, &index, &status) == 0)
        rp_features_free(reference)
        defer { rp_match_index_free(index) }
        #expect(try Self.matches { rp_match_index_match(index, current.handle, &brute, $0, $1, $2) } == expectedBrute)
        #expect(try Self.matches { rp_match_index_match(index, current.handle, &mutual, $0, $1, $2) } == expectedMutual)
        #expect(try Self.matches { rp_match_index_match(index, current.handle, &flann, $0, $1, $2) } == expectedFlann)
    }

    /// Building a FLANN index leaves the process's rand() sequence where it was. rand() is process state that
    /// FLANN builds in tests running in parallel borrow for a moment, so a collision is retried; a build that
    /// did not restore the state fails every attempt.
    @Test func flannBuildLeavesTheProcessRandomSequenceAlone() throws {
        let features = try Features(image: try Fixtures.image("graf1.png").resized(width: 320, height: 256), config: FeatureConfig())
        var config = MatchConfig()
        config.matcher = .flann
        var restored = false
        for _ in 0..<3 where !restored {
            srand(7)
            let first = rand(), second = rand()
            srand(7)
            guard rand() == first else { continue }
            _ = try MatchIndex(reference: features, config: config)
            restored = rand() == second
        }
        #expect(restored)
    }

    /// A caller's buffer smaller than the point count is refused, not overrun.
    @Test func outputBuffersCarryTheirCapacity() throws {
        let xy = (0..<20).map { Double($0 * $0 % 17) }
        var params = try PipelineConfig().homography.shimParameters()
        var h = [Double](repeating: 0, count: 9)
        var small = [UInt8](repeating: 0, count: 5)
        var count: Int32 = 0
        var status = rp_status()
        #expect(rp_find_homography(xy, xy, 10, &params, &h, &small, small.count, &count, &status) == Int32(RP_ERR_INVALID_ARGUMENT.rawValue))
        let message = withUnsafeBytes(of: &status.message) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        #expect(message == "inliers buffer holds 5, needs 10")
    }
}
