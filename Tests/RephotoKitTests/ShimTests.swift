import CShims
import Foundation
import Testing
@testable import RephotoKit

/// The C boundary: OpenCV exceptions come back as status codes with a one-line message.
@Suite struct ShimTests {
    @Test func openCVAssertionBecomesAStatus() throws {
        let image = try Fixtures.image("graf1.png")
        var params = FeatureConfig(detector: .orb).shimParameters
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
        let error = #expect(throws: RephotoError.self) { try HomographyEstimate.estimate(pairs, config: .homographyDefault) }
        #expect(error?.message == "reference point 1 is not finite")
    }

    @Test func unknownDetectorKindIsAnError() throws {
        let image = try Fixtures.image("graf1.png")
        var params = FeatureConfig().shimParameters
        params.kind = 9
        var out: OpaquePointer?
        var status = rp_status()
        #expect(rp_features_detect(image.handle, &params, nil, &out, &status) == Int32(RP_ERR_INVALID_ARGUMENT.rawValue))
    }
}
