import RephotoKit
import RephotoShimTools
import Foundation

/// Builds sequences from data others published, with their ground truth, so nothing is copied by hand.
public enum SequenceImport {
    /// From OpenCV's samples folder (opencv-doc examples/data): graf (homography H1to3p), suzanne (pure 30°
    /// rotation, known intrinsics), leuven (a real phone pair, intrinsics, no truth) and aloe (rectified
    /// Middlebury stereo: rotation identity, translation along x). Each into `output/<name>`.
    /// The sequence folders `openCVSamples` makes inside its output.
    public static let openCVSampleSequences = ["graf", "suzanne", "leuven", "aloe"]

    @discardableResult
    public static func openCVSamples(from samples: URL, to output: URL) throws -> [FrameSequence] {
        func file(_ name: String) throws -> URL {
            let url = samples.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: url.path) else { throw RephotoError.badInput("\(url.path): no such file") }
            return url
        }
        // Every input is checked before anything is written: a missing one had left some sequences made, and the
        // run again refused the folder as not empty.
        for name in ["graf1.png", "graf3.png", "H1to3p.xml", "Blender_Suzanne1.jpg", "Blender_Suzanne2.jpg", "essential_mat_data.txt",
                     "leuvenA.jpg", "leuvenB.jpg", "aloeL.jpg", "aloeR.jpg"] {
            _ = try file(name)
        }
        let license = "OpenCV samples (opencv-doc): BSD-3-Clause / Apache-2.0; see each image's original source"
        var made: [FrameSequence] = []
        func make(_ name: String, reference: String, current: String, intrinsics: SequenceIntrinsics?, frame: SequenceFrame,
                  provenance: String) throws {
            let folder = output.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for image in [reference, current] {
                let target = folder.appendingPathComponent(image)
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: try file(image), to: target)
            }
            let sequence = FrameSequence(
                manifest: SequenceManifest(name: name, intrinsics: intrinsics, reference: reference, provenance: provenance, license: license),
                frames: [frame], directory: folder)
            try sequence.write(to: folder)
            made.append(sequence)
        }

        let hPath = try file("H1to3p.xml").path
        let h = try FileStorageReader.matrix3(try readSmallFile(hPath, limit: FileStorageReader.maxBytes), key: "H13", path: hPath)
        guard h.elements.allSatisfy(\.isFinite), abs(h.determinant) > 1e-12 else {
            throw RephotoError.badInput("\(hPath): H13 is not a finite, invertible homography")
        }
        try make("graf", reference: "graf1.png", current: "graf3.png", intrinsics: nil,
                 frame: SequenceFrame(file: "graf3.png", truthHomography: h),
                 provenance: "graf1 -> graf3 of the Oxford affine covariant regions dataset (Mikolajczyk et al.), homography H1to3p.xml")

        // Camera poses of the object from OpenCV's homography tutorial: the camera turns 30° about its centre.
        let c1 = Matrix3([0.96593, 0.25882, 0, 0.08852, -0.33037, -0.93969, -0.24321, 0.90767, -0.34202])
        let c2 = Matrix3([0.96593, -0.25882, 0, -0.08852, -0.33037, -0.93969, 0.24321, 0.90767, -0.34202])
        try make("suzanne", reference: "Blender_Suzanne1.jpg", current: "Blender_Suzanne2.jpg",
                 intrinsics: SequenceIntrinsics(fx: 700, fy: 700, cx: 320, cy: 240),
                 frame: SequenceFrame(file: "Blender_Suzanne2.jpg", truthRotation: Quaternion(rotationMatrix: c2 * c1.transposed)),
                 provenance: "Blender renders from OpenCV's homography tutorial; R = R2 R1^T from its c1Mo, c2Mo; pure rotation (translation undetermined)")

        let text = try String(contentsOf: try file("essential_mat_data.txt"), encoding: .utf8)
        let numbers = text.split(whereSeparator: { $0.isWhitespace }).compactMap { Double($0) }
        guard numbers.count == 9 else { throw RephotoError.badInput("essential_mat_data.txt: expected a 3x3 camera matrix after the two file names") }
        try SequenceIntrinsics(fx: numbers[0], fy: numbers[4], cx: numbers[2], cy: numbers[5]).camera.validate("essential_mat_data.txt")
        try make("leuven", reference: "leuvenA.jpg", current: "leuvenB.jpg",
                 intrinsics: SequenceIntrinsics(fx: numbers[0], fy: numbers[4], cx: numbers[2], cy: numbers[5]),
                 frame: SequenceFrame(file: "leuvenB.jpg"),
                 provenance: "leuvenA/B from OpenCV's essential-matrix sample, intrinsics from essential_mat_data.txt; no ground truth")

        let aloe = try Image(contentsOfFile: try file("aloeL.jpg").path)
        // Middlebury 2006 full size: focal 3740 px, principal point at the centre; rectified, so R = I and the
        // right camera sits along +x: X_right = X_left − B e_x.
        try make("aloe", reference: "aloeL.jpg", current: "aloeR.jpg",
                 intrinsics: SequenceIntrinsics(fx: 3740, fy: 3740, cx: Double(aloe.width - 1) / 2, cy: Double(aloe.height - 1) / 2),
                 frame: SequenceFrame(file: "aloeR.jpg", truthRotation: .identity, truthTranslation: SIMD3(-1, 0, 0)),
                 provenance: "Middlebury 2006 stereo (Hirschmüller and Scharstein) aloe, rectified pair at full size (focal 3740 px)")
        return made
    }

    /// A Strecha-format folder (images/K.txt, images/NNNN.jpg, gt_dense_cameras/NNNN.jpg.camera) as a pair
    /// list of every pair i < j (28 for the 8 Herz-Jesu images: wide baselines as well as neighbours), with R_ij = R_jᵀ R_i and
    /// t_ij = R_jᵀ (C_i − C_j). Images are linked (or copied with `copy`).
    @discardableResult
    public static func strecha(from folder: URL, to output: URL, name: String? = nil, copy: Bool = false) throws -> FrameSequence {
        let images = folder.appendingPathComponent("images"), cameras = folder.appendingPathComponent("gt_dense_cameras")
        let kPath = images.appendingPathComponent("K.txt")
        guard let kText = try? String(contentsOf: kPath, encoding: .utf8) else { throw RephotoError.badInput("\(kPath.path): cannot read") }
        let k = kText.split(whereSeparator: { $0.isWhitespace }).compactMap { Double($0) }
        guard k.count == 9 else { throw RephotoError.badInput("\(kPath.path): expected 9 numbers, found \(k.count)") }
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: cameras.path)) ?? [])
            .filter { $0.hasSuffix(".camera") }.sorted()
        guard files.count >= 2 else { throw RephotoError.badInput("\(cameras.path): needs at least 2 .camera files, found \(files.count)") }
        var poses: [(image: String, rotation: Matrix3, centre: SIMD3<Double>)] = []
        for cameraFile in files {
            let path = cameras.appendingPathComponent(cameraFile).path
            let v = (try? String(contentsOfFile: path, encoding: .utf8))?.split(whereSeparator: { $0.isWhitespace }).compactMap { Double($0) } ?? []
            guard v.count >= 24 else { throw RephotoError.badInput("\(path): expected K, distortion, R and C (24 numbers), found \(v.count)") }
            let image = String(cameraFile.dropLast(".camera".count))
            // The image's name becomes a path in the output: "..camera" named the output's parent, which the link
            // step below then removed.
            guard !image.isEmpty, !image.hasPrefix("."), !image.contains("/") else {
                throw RephotoError.badInput("\(path): names no image file (\"\(image)\")")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: images.appendingPathComponent(image).path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw RephotoError.badInput("\(images.appendingPathComponent(image).path): no such image for \(cameraFile)")
            }
            let rotation = Matrix3(Array(v[12..<21])), centre = SIMD3(v[21], v[22], v[23])
            // Checked before anything is written: a degenerate camera became NaN or made-up truth.
            guard rotation.isRotation(tolerance: 1e-3) else {
                throw RephotoError.badInput("\(path): R is not a rotation (orthonormal with determinant 1, to 1e-3)")
            }
            guard centre.x.isFinite, centre.y.isFinite, centre.z.isFinite else { throw RephotoError.badInput("\(path): camera centre is not finite") }
            if let twin = poses.first(where: { !(length($0.centre - centre) > 0) }) {
                throw RephotoError.badInput("\(path): camera centre equals \(twin.image)'s: no baseline, no translation between them")
            }
            poses.append((image, rotation, centre))
        }
        // The other way round too: an image without its camera would silently lose every pair it is in.
        let imageTypes: Set<String> = ["jpg", "jpeg", "png", "ppm", "pgm", "tif", "tiff", "bmp"]
        let known = Set(poses.map(\.image))
        if let stray = ((try? FileManager.default.contentsOfDirectory(atPath: images.path)) ?? []).sorted()
            .first(where: { imageTypes.contains(($0 as NSString).pathExtension.lowercased()) && !known.contains($0) }) {
            throw RephotoError.badInput("\(images.appendingPathComponent(stray).path): no camera for it (\(cameras.appendingPathComponent(stray + ".camera").path)), so its pairs would be left out")
        }
        let sequenceName = name ?? folder.lastPathComponent
        let target = output
        let check = FrameSequence(
            manifest: SequenceManifest(name: sequenceName, intrinsics: SequenceIntrinsics(fx: k[0], fy: k[4], cx: k[2], cy: k[5]), reference: nil,
                                       provenance: "", license: ""),
            frames: [], directory: nil)
        try check.validate(manifestPath: kPath.path + " (the imported sequence)")
        func pair(_ i: Int, _ j: Int) throws -> SequenceFrame {
            let (ri, ci) = (poses[i].rotation, poses[i].centre), (rj, cj) = (poses[j].rotation, poses[j].centre)
            let t = rj.transposed * (ci - cj)
            // Centres like 1e200 overflow the baseline's length, and t / ∞ wrote a zero translation.
            guard length(t).isFinite else {
                throw RephotoError.badInput("\(cameras.appendingPathComponent(poses[j].image + ".camera").path): the baseline to \(poses[i].image) is not finite")
            }
            return SequenceFrame(file: poses[j].image, truthRotation: Quaternion(rotationMatrix: rj.transposed * ri),
                                 truthTranslation: t / length(t), referenceFile: poses[i].image)
        }
        // Ordered by baseline (j - i) then by reference, so the neighbours come first and the widest pair last.
        let frames = try (1..<poses.count).flatMap { gap in try (0..<(poses.count - gap)).map { try pair($0, $0 + gap) } }
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        for pose in poses {
            let link = target.appendingPathComponent(pose.image), source = images.appendingPathComponent(pose.image)
            try? FileManager.default.removeItem(at: link)
            if copy {
                try FileManager.default.copyItem(at: source, to: link)
            } else {
                try FileManager.default.createSymbolicLink(at: link, withDestinationURL: source.standardizedFileURL)
            }
        }
        let sequence = FrameSequence(
            manifest: SequenceManifest(
                name: sequenceName, intrinsics: SequenceIntrinsics(fx: k[0], fy: k[4], cx: k[2], cy: k[5]), reference: nil,
                cameraOrientation: .landscapeLeft,
                provenance: "Strecha et al., CVPR 2008 multi-view benchmark (\(folder.lastPathComponent)); imported by rephoto import strecha: every pair of images, i < j",
                license: "research and evaluation only; cite Strecha et al. 2008"),
            frames: frames, directory: target)
        try sequence.write(to: target)
        return sequence
    }
}
