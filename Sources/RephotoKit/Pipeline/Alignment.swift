import RephotoShim

/// The final step of a rephotograph, which apps otherwise leave to the user's fingers: the retake warped
/// into the reference's frame by the estimated homography, alone, blended over the reference, or as a split
/// "then and now" (reference left, retake right).
public enum Alignment {
    public enum Mode: String, Codable, CaseIterable, Sendable {
        case warped, blend, split
    }

    /// `reference` and `retake` are the colour images the result was estimated on, at full resolution or
    /// decoded reduced (`Image.fullSize` says by how much); `homography` maps full-resolution reference pixels to
    /// retake pixels. The output has the reference's (decoded) size.
    public static func compose(reference: Image, retake: Image, homography: Matrix3, mode: Mode, opacity: Double = 0.5) throws -> Image {
        guard let inverse = homography.inverse else { throw RephotoError.estimationFailed("the homography is singular: nothing to align") }
        guard opacity >= 0, opacity <= 1 else { throw RephotoError.badInput("opacity \(opacity) is not in 0...1") }
        // Reduced images: H_decoded = S_retake · H · S_reference⁻¹, S = diag(decoded / full size).
        func scaling(_ image: Image, inverted: Bool) -> Matrix3 {
            let sx = Double(image.width) / Double(max(1, image.fullSize.width)), sy = Double(image.height) / Double(max(1, image.fullSize.height))
            return inverted ? Matrix3([1 / sx, 0, 0, 0, 1 / sy, 0, 0, 0, 1]) : Matrix3([sx, 0, 0, 0, sy, 0, 0, 0, 1])
        }
        let decodedInverse = scaling(reference, inverted: false) * inverse * scaling(retake, inverted: true)
        var warped = try retake.warped(by: decodedInverse, width: reference.width, height: reference.height)
        if warped.channels != reference.channels { warped = try warped.grayscale() }
        switch mode {
        case .warped:
            return warped
        case .blend, .split:
            var out: OpaquePointer?
            let code = mode == .blend ? Int32(RP_COMPOSE_BLEND.rawValue) : Int32(RP_COMPOSE_SPLIT.rawValue)
            try shimCall { rp_image_compose(reference.handle, warped.handle, code, opacity, &out, $0) }
            return Image(handle: out!)
        }
    }
}
