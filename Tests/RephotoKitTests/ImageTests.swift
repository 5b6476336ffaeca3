import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct ImageTests {
    /// Reduced decoding (issue 9): a JPEG is decoded at the smallest libjpeg M/8 scale at or above the analysis
    /// scale, stands for its full size, and the homography found on it matches the published graf1->graf3 one.
    @Test(arguments: [(400, 4, 400), (300, 3, 300), (1600, 8, 800)])
    func reducedJPEGDecodingKeepsFullResolutionGeometry(maxDimension: Int, eighths: Int, analysisWidth: Int) throws {
        var config = PipelineConfig()
        config.features.maxDimension = maxDimension
        let estimator = try PoseEstimator(config: config)
        let jpegs = try ["graf1.png", "graf3.png"].map { try Fixtures.image($0).encoded(as: .jpeg(quality: 95)) }
        let reference = try estimator.decode(jpegs[0]), current = try estimator.decode(jpegs[1])
        #expect(reference.fullSize == ImageSize(width: 800, height: 640))
        #expect((reference.width, reference.height) == (800 * eighths / 8, 640 * eighths / 8))
        let prepared = try estimator.prepareReference(reference, camera: nil)
        #expect(prepared.size == ImageSize(width: 800, height: 640))
        #expect(abs(prepared.features.analysisScale - Double(analysisWidth) / 800) < 1e-9)
        #expect(prepared.features.keypoints.allSatisfy { $0.x > -1 && $0.x < 800 && $0.y > -1 && $0.y < 640 })
        let result = try estimator.estimate(reference: prepared, current: current, camera: nil)
        let error = GroundTruthErrors.cornerError(estimate: result.homography, truth: try Fixtures.graf13(), size: result.referenceSize)
        // Within 2 analysis pixels of the truth, and as close as detection on a full-size decode gets.
        #expect(error < 2 * 800 / Double(analysisWidth), "corner error \(error) px at maxDimension \(maxDimension)")
        let fullDecode = try ["graf1.png", "graf3.png"].map { try Image(data: jpegs[$0 == "graf1.png" ? 0 : 1], grayscale: true) }
        let baseline = try estimator.estimate(reference: try estimator.prepareReference(fullDecode[0], camera: nil), current: fullDecode[1], camera: nil)
        let baselineError = GroundTruthErrors.cornerError(estimate: baseline.homography, truth: try Fixtures.graf13(), size: baseline.referenceSize)
        #expect(error < baselineError + 800 / Double(analysisWidth), "reduced \(error) px, full decode \(baselineError) px")
    }

    /// The same features whether the JPEG was decoded reduced or at full size and then downscaled: keypoints
    /// agree in full-resolution pixels to well under an analysis pixel.
    @Test func reducedDecodingPlacesKeypointsLikeAFullDecode() throws {
        var features = FeatureConfig(detector: .akaze)
        features.maxDimension = 400
        let jpeg = try Fixtures.image("graf1.png").encoded(as: .jpeg(quality: 95))
        let reduced = try Features(image: try Image(data: jpeg, grayscale: true, reducedFor: features), config: features)
        let full = try Features(image: try Image(data: jpeg, grayscale: true), config: features)
        #expect(reduced.count > 200 && abs(reduced.count - full.count) < full.count / 5, "\(reduced.count) vs \(full.count)")
        var distances: [Double] = []
        for k in reduced.keypoints {
            distances.append(full.keypoints.map { hypot($0.x - k.x, $0.y - k.y) }.min()!)
        }
        let median = distances.sorted()[distances.count / 2]
        #expect(median < 0.5, "median offset \(median) full-resolution px")
    }

    /// PNGs have no reduced decoding: they are resized at once to the analysis size, and still stand for full size.
    @Test func reducedPNGDecodingResizesToTheAnalysisSize() throws {
        var features = FeatureConfig(detector: .akaze)
        features.maxDimension = 200
        let png = try Image(data: try Data(contentsOf: URL(fileURLWithPath: try Fixtures.sample("graf1.png"))), grayscale: true, reducedFor: features)
        #expect((png.width, png.height) == (200, 160))
        #expect(png.fullSize == ImageSize(width: 800, height: 640))
        #expect(try Image(data: try Data(contentsOf: URL(fileURLWithPath: try Fixtures.sample("graf1.png")))).fullSize == ImageSize(width: 800, height: 640))
    }

    @Test func decodesPNGAndJPEGFilesAtTheirSize() throws {
        let png = try Fixtures.image("graf1.png")
        #expect((png.width, png.height, png.channels) == (800, 640, 3))
        let jpeg = try Fixtures.image("Blender_Suzanne1.jpg")
        #expect((jpeg.width, jpeg.height) == (640, 480))
    }

    @Test func roundTripsPixelsThroughPNG() throws {
        let pixels = (0..<(7 * 5 * 3)).map { UInt8($0 * 2) }
        let image = try Image(width: 7, height: 5, channels: 3, pixels: pixels)
        let decoded = try Image(data: try image.encoded(as: .png))
        #expect(try decoded.pixels() == pixels)
    }

    /// A JPEG stored 64x32 with EXIF orientation 6 (rotate 90° clockwise to display) must come out 32x64,
    /// with the stored top-left corner at the displayed top-right.
    @Test func honoursEXIFOrientation() throws {
        var pixels = [UInt8](repeating: 0, count: 64 * 32)
        for y in 0..<12 { for x in 0..<12 { pixels[y * 64 + x] = 255 } }
        let stored = try Image(width: 64, height: 32, channels: 1, pixels: pixels)
        var jpeg = try stored.encoded(as: .jpeg(quality: 95))
        #expect(try Image(data: jpeg).width == 64)
        jpeg.insert(contentsOf: exifOrientationSegment(6), at: 2)
        let oriented = try Image(data: jpeg)
        #expect((oriented.width, oriented.height) == (32, 64))
        let gray = try oriented.grayscale().pixels()
        #expect(gray[5 * 32 + 26] > 200)  // top-right is the white block
        #expect(gray[5 * 32 + 5] < 50)
    }

    /// APP1 Exif segment holding one IFD entry: Orientation (0x0112), SHORT, value.
    private func exifOrientationSegment(_ orientation: UInt8) -> Data {
        let tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,  // little-endian TIFF, IFD at 8
                             0x01, 0x00,  // one entry
                             0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, orientation, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00]  // no next IFD
        let payload: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        return Data([0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload)
    }

    @Test func refusesImagesOverThePixelLimitBeforeDecoding() throws {
        // A PNG header claiming 20000x20000 followed by no real image data: only a header check can answer.
        var header = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13])
        header += Data("IHDR".utf8) + Data([0, 0, 0x4E, 0x20, 0, 0, 0x4E, 0x20, 8, 2, 0, 0, 0, 0, 0, 0, 0])
        header += Data([0, 0, 0, 0]) + Data("IEND".utf8) + Data([0xAE, 0x42, 0x60, 0x82])
        let error = #expect(throws: RephotoError.self) { try Image(data: header) }
        #expect(error?.kind == .badInput)
        #expect(error?.message == "image is 20000x20000 = 400.0 MP, over the limit of 50.0 MP")

        let small = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("graf1.png")))
        let limited = #expect(throws: RephotoError.self) { try Image(data: small, maxPixels: 500_000) }
        #expect(limited?.message.contains("800x640") == true)
    }

    @Test(arguments: [
        ("empty", Data(), "empty"),
        ("random", Data((0..<300).map { UInt8(($0 * 37 + 11) % 256) }), "not a JPEG or PNG"),
        ("text", Data("hello, this is not an image".utf8), "not a JPEG or PNG"),
    ])
    func rejectsNonImages(name: String, data: Data, expected: String) throws {
        let error = #expect(throws: RephotoError.self) { try Image(data: data) }
        #expect(error?.kind == .badInput)
        #expect(error?.message.contains(expected) == true, "\(name): \(error?.message ?? "")")
    }

    static let otherFormats: [(String, [UInt8], String)] = {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        let zeros = [UInt8](repeating: 0, count: 32)
        return [
            ("tiff", [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0] + zeros, "a TIFF file, not a JPEG or PNG image"),
            ("tiff-be", [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8] + zeros, "a TIFF file"),
            ("webp", bytes("RIFF") + [0x24, 0, 0, 0] + bytes("WEBPVP8 ") + zeros, "a WebP file"),
            ("heic", [0, 0, 0, 0x18] + bytes("ftypheic") + [0, 0, 0, 0] + bytes("mif1heic"), "a HEIC/HEIF file"),
            ("bmp", bytes("BM") + zeros, "a BMP file"),
            ("jp2", [0, 0, 0, 0x0C] + bytes("jP  ") + [0x0D, 0x0A, 0x87, 0x0A] + zeros, "a JPEG 2000 file"),
            ("pgm", bytes("P5\n2 2\n255\n") + [1, 2, 3, 4], "a PNM/PAM file"),
        ]
    }()

    /// The refusal names what the file is, from its magic bytes (the formats' published signatures).
    @Test func otherFormatsAreNamed() throws {
        for (name, data, expected) in Self.otherFormats {
            let error = #expect(throws: RephotoError.self) { try Image(data: Data(data)) }
            #expect(error?.message.contains(expected) == true, "\(name): \(error?.message ?? "")")
        }
    }

    /// A huge file is refused from its size and a non-image from its first bytes, before either is read (a 3 GB
    /// sparse file used to take 3.2 GB of memory before "not a JPEG or PNG").
    @Test func largeAndForeignFilesAreRefusedUnread() throws {
        let dir = try Scratch.directory()
        func sparse(_ name: String, _ head: [UInt8], _ size: UInt64) throws -> String {
            let url = dir.appendingPathComponent(name)
            try Data(head).write(to: url)
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: size)
            try handle.close()
            return url.path
        }
        let huge = try sparse("huge.jpg", [0xFF, 0xD8, 0xFF, 0xE0], 3 << 30)
        let tooLarge = #expect(throws: RephotoError.self) { try Image(contentsOfFile: huge) }
        #expect(tooLarge?.message == "\(huge): 3221225472 bytes, over the limit of 268435456 bytes (maxBytes, --max-bytes)")
        let tiff = try sparse("scan.tif", [0x49, 0x49, 0x2A, 0x00], 100 << 20)
        let foreign = #expect(throws: RephotoError.self) { try Image(contentsOfFile: tiff) }
        #expect(foreign?.message == "\(tiff): a TIFF file, not a JPEG or PNG image (104857600 bytes): convert it to JPEG or PNG")
        let small = #expect(throws: RephotoError.self) { try Image(contentsOfFile: Fixtures.sample("graf1.png"), maxBytes: 1000) }
        #expect(small?.message.contains("over the limit of 1000 bytes") == true)
    }

    /// Seven bytes deleted mid-file: libjpeg still decodes a shifted, discoloured image and used to say so only on
    /// stderr. The warning now travels with the image, and `strict` refuses it.
    @Test func damagedJPEGDataIsReportedOrRefused() throws {
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("Blender_Suzanne2.jpg")))
        let middle = jpeg.count / 2
        let damaged = jpeg.prefix(middle) + jpeg.dropFirst(middle + 7)
        let image = try Image(data: damaged)
        #expect(image.decodeWarning?.hasPrefix("Corrupt JPEG data") == true, "\(image.decodeWarning ?? "no warning")")
        #expect(try Image(data: jpeg).decodeWarning == nil)
        let strict = #expect(throws: RephotoError.self) { try Image(data: damaged, strict: true) }
        #expect(strict?.message.hasPrefix("damaged image data (Corrupt JPEG data") == true)
        // The estimate carries it as a warning naming the image.
        let result = try PoseEstimator().estimate(reference: try Fixtures.image("Blender_Suzanne1.jpg"), current: image, camera: nil)
        #expect(result.warnings.contains { $0.hasPrefix("current image has damaged data: Corrupt JPEG data") })
    }

    /// A flipped byte in PNG image data fails its chunk's CRC: refused with the chunk named, before libpng runs.
    @Test func damagedPNGIsRefusedByItsChecksum() throws {
        var png = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("graf1.png")))
        let idat = try #require(png.range(of: Data("IDAT".utf8)))
        png[idat.upperBound + 200] ^= 0xFF
        let error = #expect(throws: RephotoError.self) { try Image(data: png) }
        #expect(error?.message.hasPrefix("corrupt PNG: CRC mismatch in the IDAT chunk at byte") == true, "\(error?.message ?? "")")
    }

    @Test func rejectsTruncatedJPEGAndPNG() throws {
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("Blender_Suzanne1.jpg")))
        let cutJPEG = #expect(throws: RephotoError.self) { try Image(data: jpeg.prefix(jpeg.count / 2)) }
        #expect(cutJPEG?.message.hasPrefix("truncated JPEG") == true)
        let png = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("graf1.png")))
        let cutPNG = #expect(throws: RephotoError.self) { try Image(data: png.prefix(png.count / 2)) }
        #expect(cutPNG?.message.hasPrefix("truncated PNG") == true)
    }

    @Test func damagedJPEGIsAnErrorNotAPartialImage() throws {
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("Blender_Suzanne1.jpg")))
        let scan = try #require(jpeg.firstRange(of: Data([0xFF, 0xDA])))
        // An invalid marker in the middle of the compressed data, as a damaged transfer leaves it.
        var damaged = jpeg
        let at = (scan.upperBound + jpeg.count) / 2
        damaged.replaceSubrange(at..<at + 2, with: Data([0xFF, 0x13]))
        let error = #expect(throws: RephotoError.self) { try Image(data: damaged) }
        #expect(error?.message == "corrupt JPEG: invalid marker 0xFF13 at byte \(at)")
        // A lost frame header (SOF0 or SOF2 turned into an APP14 segment).
        var headless = jpeg
        let sof = try #require(jpeg.indices.dropLast().first { jpeg[$0] == 0xFF && (jpeg[$0 + 1] == 0xC0 || jpeg[$0 + 1] == 0xC2) })
        headless[sof + 1] = 0xEE
        let lost = #expect(throws: RephotoError.self) { try Image(data: headless) }
        #expect(lost?.message == "corrupt JPEG: image data before a frame header with a size")
    }

    @Test func fileErrorsNameThePath() throws {
        let missing = #expect(throws: RephotoError.self) { try Image(contentsOfFile: "/nonexistent/photo.jpg") }
        #expect(missing?.message == "/nonexistent/photo.jpg: no such file")
        let empty = try Fixtures.temporaryFile("empty.jpg", Data())
        let emptyError = #expect(throws: RephotoError.self) { try Image(contentsOfFile: empty) }
        #expect(emptyError?.message == "\(empty): empty file (0 bytes)")
    }
}
