import Foundation
import RephotoData
import RephotoTestSupport
import Testing
@testable import RephotoKit

/// What a reference is (`ReferenceKindEvidence`): declared, a print when its camera is unknown, else detected from its
/// tones and a scanned border, on scans made here with known tones and borders.
@Suite struct ReferenceKindTests {
    /// The grey scan of `OldPrintTests.scan`, tinted warm: blue 0.7, green 0.85, red 1 of each grey level.
    static func sepia(_ grey: Image) throws -> Image {
        let pixels = try grey.pixels()
        var tinted: [UInt8] = []
        tinted.reserveCapacity(pixels.count * 3)
        for v in pixels { tinted += [UInt8(Double(v) * 0.7), UInt8(Double(v) * 0.85), v] }
        return try Image(width: grey.width, height: grey.height, channels: 3, pixels: tinted)
    }

    @Test func aGreyOrSepiaScanInsideItsBorderIsAPrint() throws {
        let grey = try OldPrintTests.scan(colour: 235, tilt: 0)
        let found = try ReferenceKindEvidence.detect(grey)
        #expect(found.kind == .print && found.source == .detected && found.tone == .grey && found.border == true, "\(found)")
        let warm = try ReferenceKindEvidence.detect(Self.sepia(grey))
        #expect(warm.kind == .print && warm.tone == .sepia && warm.border == true, "\(warm)")
        #expect((warm.meanChroma ?? 0) > 4, "\(warm)")
    }

    /// A colour photo, and a grey photo without a border, are photos: grey tones alone do not make a print.
    @Test func aColourPhotoOrAGreyPhotoWithoutBorderIsAPhoto() throws {
        let colour = try ReferenceKindEvidence.detect(Fixtures.image("graf1.png"))
        #expect(colour.kind == .photo && colour.tone == .colour && colour.border == false, "\(colour)")
        let grey = try ReferenceKindEvidence.detect(Fixtures.image("graf1.png").grayscale())
        #expect(grey.kind == .photo && grey.tone == .grey && grey.border == false, "\(grey)")
    }

    /// Declared wins over everything; undeclared with the camera unknown is a print, as an old photo always was.
    @Test func aDeclaredKindOrAnUnknownCameraIsNotDetected() throws {
        let scan = try OldPrintTests.scan(colour: 235, tilt: 0)
        #expect(try ReferenceKindEvidence.resolve(.photo, cameraUnknown: true, image: scan) == ReferenceKindEvidence(kind: .photo, source: .declared))
        #expect(try ReferenceKindEvidence.resolve(nil, cameraUnknown: true, image: try Fixtures.image("graf1.png"))
                == ReferenceKindEvidence(kind: .print, source: .cameraUnknown))
        #expect(try ReferenceKindEvidence.resolve(nil, cameraUnknown: false, image: scan).source == .detected)
    }

    /// A print's treatment keys on its kind: a print of known camera is prepared with its border found, a photo without.
    @Test func aPrintOfKnownCameraGetsTheOldPhotoTreatment() throws {
        let scan = try OldPrintTests.scan(colour: 235, tilt: 0)
        let camera = CameraIntrinsics(fx: 600, fy: 600, cx: Double(scan.width - 1) / 2, cy: Double(scan.height - 1) / 2)
        let print = try PoseEstimator(config: PipelineConfig().forReference(kind: .print))
        let asPrint = try print.prepareReference(scan, camera: camera, kind: try ReferenceKindEvidence.detect(scan))
        #expect(asPrint.kind.kind == .print && asPrint.border != nil && asPrint.features.config.akaze.descriptorType == PipelineConfig().features.forUnknownReference().akaze.descriptorType)
        let asPhoto = try PoseEstimator().prepareReference(scan, camera: camera, kind: ReferenceKindEvidence(kind: .photo, source: .declared))
        #expect(asPhoto.kind.kind == .photo && asPhoto.border == nil)
    }

    /// sequence.json's referenceKind: "photo" or "print", anything else refused by name.
    @Test func sequenceJSONDeclaresTheKind() throws {
        let base = #"{"name": "s", "reference": "r.jpg", "intrinsics": {"fx": 500, "fy": 500, "cx": 320, "cy": 240}"#
        let manifest = try JSONDecoder().decode(SequenceManifest.self, from: Data((base + #", "referenceKind": "print"}"#).utf8))
        #expect(manifest.referenceKind == .print)
        #expect(try JSONDecoder().decode(SequenceManifest.self, from: Data((base + "}").utf8)).referenceKind == nil)
        #expect { try JSONDecoder().decode(SequenceManifest.self, from: Data((base + #", "referenceKind": "painting"}"#).utf8)) } throws: { error in
            "\(error)".contains("referenceKind 'painting' must be \"photo\" or \"print\"")
        }
    }
}
