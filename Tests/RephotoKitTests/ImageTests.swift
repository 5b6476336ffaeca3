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

    /// Saved features (a reference store) come back as they were: same keypoints, same matches, same homography;
    /// damaged files are refused.
    @Test(arguments: [DetectorKind.akaze, .orb, .sift])
    func featuresSurviveSavingAndLoading(detector: DetectorKind) throws {
        var config = PipelineConfig()
        config.features.detector = detector
        let estimator = try PoseEstimator(config: config)
        let fresh = try estimator.prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        let data = try fresh.features.serialized()
        let loaded = try Features(serialized: data, config: config.features)
        #expect(loaded.keypoints == fresh.features.keypoints && loaded.imageSize == fresh.features.imageSize)
        #expect(loaded.isBinary == fresh.features.isBinary && loaded.descriptorBytes == fresh.features.descriptorBytes)
        let current = try Fixtures.image("graf3.png")
        let a = try estimator.estimate(reference: fresh, current: current, camera: nil)
        let b = try estimator.estimate(reference: try estimator.prepareReference(features: loaded, camera: nil), current: current, camera: nil)
        #expect(a.homography == b.homography && a.counts == b.counts)
        for damaged in [data.prefix(40), data.dropLast(1), Data("RPFEAT01".utf8) + Data(repeating: 0xFF, count: 64)] {
            #expect(throws: RephotoError.self) { try Features(serialized: Data(damaged), config: config.features) }
        }
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
        jpeg.insert(contentsOf: Fixtures.exifOrientationSegment(6), at: 2)
        let oriented = try Image(data: jpeg)
        #expect((oriented.width, oriented.height) == (32, 64) && oriented.exifOrientation == 6)
        let gray = try oriented.grayscale().pixels()
        #expect(gray[5 * 32 + 26] > 200)  // top-right is the white block
        #expect(gray[5 * 32 + 5] < 50)
    }

    /// OpenCV turns a TIFF by its Orientation tag as it decodes; the orientation is reported as a JPEG's is, so
    /// calibration can refuse a mix (probe: TIFFs of orientation 3 among upright ones averaged cx, exit 0).
    @Test func reportsATIFFsOrientation() throws {
        // An uncompressed 8x4 grey TIFF, stored with one white pixel at the top left.
        func tiff(orientation: UInt16, floating: Bool = false) -> Data {
            let (w, h): (UInt16, UInt16) = (8, 4)
            var tags: [(UInt16, UInt16, UInt32)] = [(256, 3, UInt32(w)), (257, 3, UInt32(h)), (258, 3, 8), (259, 3, 1), (262, 3, 1),
                                                    (273, 4, 8 + 2 + 10 * 12 + 4), (274, 3, UInt32(orientation)), (277, 3, 1),
                                                    (278, 3, UInt32(h)), (279, 4, UInt32(w) * UInt32(h))]
            if floating { tags += [(339, 3, 3)] }
            var bytes: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0, UInt8(tags.count), 0]
            for (tag, type, value) in tags {
                bytes += [UInt8(tag & 0xFF), UInt8(tag >> 8), UInt8(type), 0, 1, 0, 0, 0]
                bytes += [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
            }
            bytes += [0, 0, 0, 0]
            var pixels = [UInt8](repeating: 0, count: Int(w) * Int(h))
            pixels[0] = 255
            return Data(bytes + pixels)
        }
        let upright = try Image(data: tiff(orientation: 1))
        #expect(try upright.exifOrientation == 1 && upright.grayscale().pixels()[0] == 255)
        let turned = try Image(data: tiff(orientation: 3))
        #expect(turned.exifOrientation == 3 && (turned.width, turned.height) == (8, 4))
        #expect(try turned.grayscale().pixels()[3 * 8 + 7] == 255)  // the stored top left, displayed bottom right
        let sideways = try Image(data: tiff(orientation: 6))
        #expect(sideways.exifOrientation == 6 && (sideways.width, sideways.height) == (4, 8))
        // Floating-point samples are named, not called corrupt (OpenCV reads them only as float images).
        let floating = #expect(throws: RephotoError.self) { try Image(data: tiff(orientation: 1, floating: true)) }
        #expect(floating?.message == "a floating-point TIFF, which is not supported: convert it to 8 or 16 bits per sample")
    }

    @Test func refusesImagesOverThePixelLimitBeforeDecoding() throws {
        // A PNG header claiming 20000x20000 followed by no real image data: only a header check can answer.
        var header = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13])
        header += Data("IHDR".utf8) + Data([0, 0, 0x4E, 0x20, 0, 0, 0x4E, 0x20, 8, 2, 0, 0, 0, 0, 0, 0, 0])
        header += Data([0, 0, 0, 0]) + Data("IEND".utf8) + Data([0xAE, 0x42, 0x60, 0x82])
        let error = #expect(throws: RephotoError.self) { try Image(data: header) }
        #expect(error?.kind == .badInput)
        #expect(error?.message == "image is 20000x20000 = 400.0 MP, over the limit of 50000000 pixels (maxPixels)")

        // Past 2^31 - 1 (the PNG limit) a size is damage: it was reported clamped, as 2147483647x...
        for width: [UInt8] in [[0xFF, 0xFF, 0xFF, 0xFF], [0x80, 0, 0, 0], [0, 0, 0, 0]] {
            var damaged = header
            damaged.replaceSubrange(16..<20, with: width)
            let error = #expect(throws: RephotoError.self) { try Image(data: damaged) }
            #expect(error?.cause == .corruptImage)
            // The value read is the subject: reported as read, not clamped.
            #expect(error?.message.hasPrefix("corrupt PNG: size \(width.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })x20000 in its header") == true,
                    "\(error?.message ?? "")")
        }

        let small = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("graf1.png")))
        let limited = #expect(throws: RephotoError.self) { try Image(data: small, maxPixels: 500_000) }
        #expect(limited?.message.contains("800x640") == true)
    }

    @Test(arguments: [
        ("empty", Data(), "empty"),
        ("random", Data((0..<300).map { UInt8(($0 * 37 + 11) % 256) }), "not a JPEG, PNG, HEIC/HEIF, TIFF, WebP, BMP, PNM or JPEG 2000 image"),
        ("text", Data("hello, this is not an image".utf8), "not a JPEG, PNG"),
    ])
    func rejectsNonImages(name: String, data: Data, expected: String) throws {
        let error = #expect(throws: RephotoError.self) { try Image(data: data) }
        #expect(error?.kind == .badInput)
        #expect(error?.message.contains(expected) == true, "\(name): \(error?.message ?? "")")
    }

    static let otherFormats: [(String, [UInt8], String, Refusal)] = {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        let zeros = [UInt8](repeating: 0, count: 32)
        // Unsupported formats are named; damaged headers of supported ones say which format and what is wrong.
        return [
            ("gif", bytes("GIF89a") + zeros, "a GIF file, which is not supported", .unsupported),
            ("avif", [0, 0, 0, 0x18] + bytes("ftypavif") + zeros, "an AVIF file, which is not supported", .unsupported),
            ("pdf", bytes("%PDF-1.7") + zeros, "a PDF file, which is not supported", .unsupported),
            ("bigtiff", [0x49, 0x49, 0x2B, 0x00, 8, 0, 0, 0] + zeros, "a BigTIFF file", .unsupported),
            ("tiff", [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0] + zeros, "corrupt TIFF: no image width and height", .corrupt),
            ("tiff-be", [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 0x40] + zeros, "corrupt TIFF: the first directory lies outside the file", .corrupt),
            ("webp", bytes("RIFF") + [0x24, 0, 0, 0] + bytes("WEBPVP8 ") + zeros, "corrupt WebP: zero width or height", .corrupt),
            ("heic", [0, 0, 0, 0x18] + bytes("ftypheic") + [0, 0, 0, 0] + bytes("mif1heic"), "corrupt HEIF", .corrupt),
            ("bmp", bytes("BM") + zeros, "corrupt BMP", .corrupt),
            ("jp2", [0, 0, 0, 0x0C] + bytes("jP  ") + [0x0D, 0x0A, 0x87, 0x0A] + zeros, "corrupt JPEG 2000: no image header box", .corrupt),
            ("pgm", bytes("P5\n2 2\n255\n") + [1, 2], "truncated PNM: 2 bytes of pixels for a 2x2 image that needs 4", .truncated),
        ]
    }()

    /// How a refusal of `otherFormats` is typed: an unsupported format (HTTP 415), or a damaged one by its cause.
    enum Refusal {
        case unsupported, corrupt, truncated

        func matches(_ error: RephotoError?) -> Bool {
            switch self {
            case .unsupported: error?.reason == .unsupportedFormat && error?.cause == nil
            case .corrupt: error?.reason == nil && error?.cause == .corruptImage
            case .truncated: error?.reason == nil && error?.cause == .truncatedImage
            }
        }
    }

    /// The refusal names what the file is, from its magic bytes (the formats' published signatures).
    /// Every supported format, each file written by a tool independent of rephoto and OpenCV's encoders
    /// (scripts/make-format-fixtures: netpbm, libtiff, cwebp, OpenJPEG, heif-enc), decodes to the picture the
    /// PNG (written by Pillow) holds: exactly for lossless files, closely for lossy ones.
    @Test(arguments: [("source.ppm", 0.0), ("source.bmp", 0), ("source.tif", 0), ("source.webp", 0), ("source.jp2", 0),
                      ("source.j2k", 0), ("lossy.webp", 6), ("source.heic", 6)])
    func decodesEveryFormatFromIndependentTools(file: String, tolerance: Double) throws {
        let source = try Image(contentsOfFile: Self.formatFixture("source.png"))
        let image = try Image(contentsOfFile: Self.formatFixture(file))
        #expect((image.width, image.height, image.channels) == (128, 96, 3))
        let difference = Self.meanAbsoluteDifference(try image.pixels(), try source.pixels())
        #expect(difference <= tolerance, "\(file): mean difference \(difference)")
        let grey = try Image(contentsOfFile: Self.formatFixture(file), grayscale: true)
        #expect((grey.width, grey.height, grey.channels) == (128, 96, 1))
    }

    @Test func decodesGreyPNM() throws {
        let grey = try Image(contentsOfFile: Self.formatFixture("grey.pgm"), grayscale: true)
        let expected = try Image(contentsOfFile: Self.formatFixture("source.png"), grayscale: true)
        // netpbm's luma weights differ from OpenCV's in the last digit.
        #expect(Self.meanAbsoluteDifference(try grey.pixels(), try expected.pixels()) < 1.5)
    }

    /// HEIF orientation lives in the irot/imir boxes (pillow-heif writes them from an EXIF orientation); it is
    /// honoured as EXIF orientation is in a JPEG: 6 turns the picture 90° clockwise, 2 mirrors it.
    @Test func honoursHEIFOrientation() throws {
        let source = try Image(contentsOfFile: Self.formatFixture("source.png"))
        let rotated = try Image(contentsOfFile: Self.formatFixture("orientation6.heic"))
        #expect((rotated.width, rotated.height) == (96, 128))
        #expect(rotated.fullSize == ImageSize(width: 96, height: 128))
        let mirrored = try Image(contentsOfFile: Self.formatFixture("orientation2.heic"))
        #expect((mirrored.width, mirrored.height) == (128, 96))
        let s = try source.pixels(), r = try rotated.pixels(), m = try mirrored.pixels()
        var expectedRotation = [UInt8](repeating: 0, count: s.count), expectedMirror = expectedRotation
        for y in 0..<96 {
            for x in 0..<128 {
                for c in 0..<3 {
                    // 90° clockwise: source (x, y) lands at (95 - y, x) in a 96-wide image.
                    expectedRotation[(x * 96 + (95 - y)) * 3 + c] = s[(y * 128 + x) * 3 + c]
                    expectedMirror[(y * 128 + (127 - x)) * 3 + c] = s[(y * 128 + x) * 3 + c]
                }
            }
        }
        #expect(Self.meanAbsoluteDifference(r, expectedRotation) < 6)
        #expect(Self.meanAbsoluteDifference(m, expectedMirror) < 6)
        // The red block of the top-left corner is now top right in both (BGR).
        #expect(r[(20 * 96 + 84) * 3 + 2] > 200 && r[(20 * 96 + 84) * 3 + 1] < 60)
        #expect(m[(11 * 128 + 106) * 3 + 2] > 200 && m[(11 * 128 + 106) * 3 + 1] < 60)
    }

    /// A PNG's eXIf chunk (orientation 6, inserted after IHDR with Python's zlib) turns it as the same tag turns
    /// a JPEG: it was ignored, so a phone's PNG came out lying on its side. The grey and the reduced decodes, and
    /// the full size they stand for, turn with it.
    @Test func honoursPNGExifOrientation() throws {
        let source = try Image(contentsOfFile: Self.formatFixture("source.png"))
        let rotated = try Image(contentsOfFile: Self.formatFixture("orientation6.png"))
        #expect((rotated.width, rotated.height, rotated.exifOrientation) == (96, 128, 6))
        let s = try source.pixels(), r = try rotated.pixels()
        var expected = [UInt8](repeating: 0, count: s.count)
        for y in 0..<96 {
            for x in 0..<128 {
                // 90° clockwise: source (x, y) lands at (95 - y, x) in a 96-wide image.
                for c in 0..<3 { expected[(x * 96 + (95 - y)) * 3 + c] = s[(y * 128 + x) * 3 + c] }
            }
        }
        #expect(r == expected)
        var features = FeatureConfig(detector: .akaze)
        features.maxDimension = 64
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.formatFixture("orientation6.png")))
        let reduced = try Image(data: data, grayscale: true, reducedFor: features)
        #expect((reduced.width, reduced.height) == (48, 64) && reduced.fullSize == ImageSize(width: 96, height: 128))
    }

    /// A progressive JPEG (cv2.imencode, 10 scans) decodes; the same file with its last scan repeated 200 times is
    /// refused from its header walk, before decoding: each scan is a pass over the whole image, and a 1.7 MB file
    /// of 20,000 scans held a pipeline for 15 minutes (probe).
    @Test func jpegScanBombsAreRefused() throws {
        let progressive = try Data(contentsOf: URL(fileURLWithPath: Self.formatFixture("progressive.jpg")))
        #expect(try Image(data: progressive).width == 128)
        let bytes = [UInt8](progressive)
        let lastScan = try #require((0..<bytes.count - 1).last { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let scan = bytes[lastScan..<(bytes.count - 2)]
        let bomb = Data(bytes[..<(bytes.count - 2)] + Array(repeating: Array(scan), count: 200).flatMap { $0 } + [0xFF, 0xD9])
        let error = #expect(throws: RephotoError.self) { try Image(data: bomb) }
        #expect(error?.message == "corrupt JPEG: over 100 scans (a decoding bomb; encoders write a few dozen at most)", "\(error?.message ?? "")")
    }

    /// The pixel limit is read from every format's header, before decoding.
    @Test(arguments: ["source.ppm", "source.bmp", "source.tif", "source.webp", "source.heic", "grey.pgm"])
    func pixelLimitHoldsForEveryFormat(file: String) throws {
        let error = #expect(throws: RephotoError.self) { try Image(contentsOfFile: Self.formatFixture(file), maxPixels: 128 * 96 - 1) }
        #expect(error?.message.contains("128x96") == true, "\(file): \(error?.message ?? "")")
        #expect(try Image(contentsOfFile: Self.formatFixture(file), maxPixels: 128 * 96).width == 128)
    }

    /// OpenJPEG holds each sample as 4 bytes while decoding (a 45 MP colour JP2 peaked `pose` at 892 MB): a JPEG 2000
    /// image of 3 components gets a quarter of maxPixels, read from the codestream the decoder reads.
    @Test(arguments: ["source.jp2", "source.j2k"])
    func jpeg2000GetsTheSamplesThatCostWhatMaxPixelsAllows(file: String) throws {
        let quarter = 128 * 96 * 4
        let error = #expect(throws: RephotoError.self) { try Image(contentsOfFile: Self.formatFixture(file), maxPixels: quarter - 1) }
        #expect(error?.reason == .tooLarge)
        #expect(error?.message.hasSuffix(": JPEG 2000 image is 128x96 decoded into 3 channels, over this format's limit of 12287 pixels (its decoder holds 4 bytes a sample: maxPixels \(quarter - 1) x 3/(4 x 3))") == true, "\(error?.message ?? "")")
        #expect(try Image(contentsOfFile: Self.formatFixture(file), maxPixels: quarter).width == 128)
    }

    /// A palette (pclr) turns one component into as many channels as it has columns, each decoded in full: the limit
    /// counts them (a 37 MP grey JP2 with a 16-column palette took 2.64 GB).
    @Test func aJP2PaletteIsCountedInChannels() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.formatFixture("source.jp2"))))
        func at(_ type: String) throws -> Int { try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual(Array(type.utf8)) }) - 4 }
        let jp2h = try at("jp2h"), ihdr = try at("ihdr")
        let columns = 200
        let body: [UInt8] = [0, 1, UInt8(columns)] + [UInt8](repeating: 7, count: columns) + [UInt8](repeating: 0, count: columns)
        let length = 8 + body.count
        let pclr = [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + Array("pclr".utf8) + body
        bytes.insert(contentsOf: pclr, at: ihdr + 22)  // after the 22-byte ihdr box
        let jp2hLength = (Int(bytes[jp2h]) << 24 | Int(bytes[jp2h + 1]) << 16 | Int(bytes[jp2h + 2]) << 8 | Int(bytes[jp2h + 3])) + length
        bytes.replaceSubrange(jp2h..<jp2h + 4, with: [UInt8(jp2hLength >> 24), UInt8(jp2hLength >> 16 & 0xFF), UInt8(jp2hLength >> 8 & 0xFF), UInt8(jp2hLength & 0xFF)])
        let limit = 128 * 96 * 4  // the plain fixture's 3 channels fit exactly
        let error = #expect(throws: RephotoError.self) { try Image(data: Data(bytes), maxPixels: limit) }
        #expect(error?.message == "JPEG 2000 image is 128x96 decoded into 200 channels, over this format's limit of 184 pixels (its decoder holds 4 bytes a sample: maxPixels \(limit) x 3/(4 x 200))", "\(error?.message ?? "")")
    }

    /// OpenJPEG keeps about 1 KB per tile and component before it reads a pixel (a 178-byte file of 65,535 tiles took
    /// 1.65 GB): a codestream of 1,000x1,000 one-pixel tiles is refused from its SIZ segment, whatever its pixels.
    @Test func aJPEG2000OfCountlessTilesIsRefusedBeforeDecoding() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.formatFixture("source.j2k"))))
        func put(_ value: UInt32, at offset: Int) { bytes.replaceSubrange(offset..<offset + 4, with: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]) }
        put(1000, at: 8); put(1000, at: 12)  // Xsiz, Ysiz
        put(1, at: 24); put(1, at: 28)  // XTsiz, YTsiz
        let error = #expect(throws: RephotoError.self) { try Image(data: Data(bytes)) }
        #expect(error?.reason == .tooLarge)
        #expect(error?.message == "JPEG 2000 image has 1000000 tiles of 3 components = 3000000 tile-components, over the limit of 65536 (its decoder keeps about 1 KB for each before reading a pixel)", "\(error?.message ?? "")")
        put(0xFFFF_FFFF, at: 8)
        let huge = #expect(throws: RephotoError.self) { try Image(data: Data(bytes)) }
        #expect(huge?.message == "corrupt JPEG 2000: size 4294967295x1000 in its SIZ segment", "\(huge?.message ?? "")")
    }

    /// A JP2 file whose header box disagrees with its codestream is refused: the limit is checked on what is decoded.
    @Test func aJP2HeaderThatBelittlesItsCodestreamIsRefused() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.formatFixture("source.jp2"))))
        let ihdr = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual(Array("ihdr".utf8)) }) + 4
        bytes[ihdr + 7] = 16  // the header's width 128 -> 16; the codestream still says 128
        let error = #expect(throws: RephotoError.self) { try Image(data: Data(bytes)) }
        #expect(error?.message == "corrupt JPEG 2000: the header box says 16x96 with 3 components, the codestream 128x96 with 3", "\(error?.message ?? "")")
    }

    /// A JP2 file cut inside its codestream box is called truncated, with the box's length and what the file holds.
    @Test func aJP2CutInItsCodestreamIsCalledTruncated() throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.formatFixture("source.jp2"))))
        let jp2c = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual(Array("jp2c".utf8)) }) - 4
        let length = Int(bytes[jp2c]) << 24 | Int(bytes[jp2c + 1]) << 16 | Int(bytes[jp2c + 2]) << 8 | Int(bytes[jp2c + 3])
        #expect(jp2c + length == bytes.count)
        let cut = Data(bytes[..<(jp2c + 200)])
        let error = #expect(throws: RephotoError.self) { try Image(data: cut) }
        #expect(error?.message == "truncated JPEG 2000: its codestream box (jp2c) is \(length) bytes, the file holds 200 of them", "\(error?.message ?? "")")
    }

    /// 16-bit PNGs read as cv::imread reads them: each sample cut to its high byte (the fixtures hold a known
    /// 8-bit value p in the high byte of every sample, under a random low byte, made with cv2.imwrite), alpha
    /// dropped, and grey from OpenCV's weights, the same decoded grey or from the decoded colour.
    @Test func sixteenBitPNGsKeepTheHighByte() throws {
        let (w, h) = (64, 48)
        func p(_ x: Int, _ y: Int, _ c: Int) -> UInt8 { UInt8((x * 4 + y * 3 + c * 50) % 256) }
        let colour = try Image(contentsOfFile: Self.formatFixture("deep16-bgra.png"))
        #expect((colour.width, colour.height, colour.channels) == (w, h, 3))
        var expected: [UInt8] = []
        for y in 0..<h { for x in 0..<w { for c in 0..<3 { expected.append(p(x, y, c)) } } }
        #expect(try colour.pixels() == expected)
        let grey = try Image(contentsOfFile: Self.formatFixture("deep16-bgra.png"), grayscale: true)
        #expect(grey.channels == 1)
        #expect(try grey.pixels() == (try colour.grayscale().pixels()))
        let single = try Image(contentsOfFile: Self.formatFixture("deep16-grey.png"), grayscale: true)
        #expect(try single.pixels() == (0..<h).flatMap { y in (0..<w).map { x in p(x, y, 0) } })
        let spread = try Image(contentsOfFile: Self.formatFixture("deep16-grey.png"))
        #expect(try spread.pixels() == (try single.pixels()).flatMap { [$0, $0, $0] })
    }

    static func formatFixture(_ name: String) -> String {
        Fixtures.packageRoot.appendingPathComponent("Tests/fixtures/formats/\(name)").path
    }

    static func meanAbsoluteDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return .infinity }
        return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
    }

    @Test func otherFormatsAreNamed() throws {
        for (name, data, expected, refusal) in Self.otherFormats {
            let error = #expect(throws: RephotoError.self) { try Image(data: Data(data)) }
            #expect(refusal.matches(error), "\(name): \(String(describing: error?.reason)), \(String(describing: error?.cause))")
            // The format named is the subject.
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
        let gif = try sparse("scan.gif", Array("GIF89a".utf8), 100 << 20)
        let foreign = #expect(throws: RephotoError.self) { try Image(contentsOfFile: gif) }
        #expect(foreign?.message == "\(gif): a GIF file, which is not supported (104857600 bytes): convert it to JPEG or PNG")
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
        #expect(strict?.cause == .damagedImage && strict?.kind == .badInput)
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
        #expect(error?.cause == .corruptImage, "\(error?.message ?? "")")
        // The chunk named is the subject.
        #expect(error?.message.hasPrefix("corrupt PNG: CRC mismatch in the IDAT chunk at byte") == true, "\(error?.message ?? "")")
    }

    @Test func rejectsTruncatedJPEGAndPNG() throws {
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("Blender_Suzanne1.jpg")))
        let cutJPEG = #expect(throws: RephotoError.self) { try Image(data: jpeg.prefix(jpeg.count / 2)) }
        #expect(cutJPEG?.cause == .truncatedImage && cutJPEG?.kind == .badInput, "\(cutJPEG?.message ?? "")")
        let png = try Data(contentsOf: URL(fileURLWithPath: Fixtures.sample("graf1.png")))
        let cutPNG = #expect(throws: RephotoError.self) { try Image(data: png.prefix(png.count / 2)) }
        #expect(cutPNG?.cause == .truncatedImage && cutPNG?.kind == .badInput, "\(cutPNG?.message ?? "")")
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
