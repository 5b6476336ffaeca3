import Foundation

/// What a reference is: a photo, or an old print (a scan of a paper print, or a photo of one). A print is matched with
/// the old-photo treatment whatever is known of its camera (`PipelineConfig.forReference(kind:)`: contrast equalised,
/// a lower detector threshold, upright descriptors; and a scanned border found, a second matching pass along epipolar
/// lines, frames met at the print's scale).
public enum ReferenceKind: String, Codable, CaseIterable, Sendable {
    case photo, print
}

/// A reference's kind and how it was settled, as results report it (`referenceKind`).
public struct ReferenceKindEvidence: Codable, Equatable, Sendable {
    public enum Source: String, Codable, Sendable {
        /// Given by the caller (`referenceKind` in sequence.json or the worker's metadata, `--reference-kind`).
        case declared
        /// Not given, and its camera is unknown: an old photo by the caller's word.
        case cameraUnknown
        /// Not given: detected from its tones and a scanned border (`ReferenceKindEvidence.detect`).
        case detected
        /// Not given and not looked at (a reference prepared from saved features): a photo.
        case assumed
    }

    /// The tones of an image: grey (no colour), sepia (one warm tint), or colour.
    public enum Tone: String, Codable, Sendable {
        case grey, sepia, colour
    }

    public var kind: ReferenceKind
    public var source: Source
    /// What detection saw (nil when it did not look).
    public var tone: Tone?
    /// The mean chroma (the largest channel less the smallest), grey levels 0-255.
    public var meanChroma: Double?
    /// A scanned print's border was found around it.
    public var border: Bool?

    public init(kind: ReferenceKind, source: Source, tone: Tone? = nil, meanChroma: Double? = nil, border: Bool? = nil) {
        self.kind = kind
        self.source = source
        self.tone = tone
        self.meanChroma = meanChroma
        self.border = border
    }

    /// The kind when it is not detected: declared, else a print when the camera is unknown, else a photo.
    public static func given(_ declared: ReferenceKind?, cameraUnknown: Bool) -> ReferenceKindEvidence {
        if let declared { return ReferenceKindEvidence(kind: declared, source: .declared) }
        return cameraUnknown ? ReferenceKindEvidence(kind: .print, source: .cameraUnknown) : ReferenceKindEvidence(kind: .photo, source: .assumed)
    }

    /// Declared, else a print when the camera is unknown, else detected from `image` (in colour, any size).
    public static func resolve(_ declared: ReferenceKind?, cameraUnknown: Bool, image: @autoclosure () throws -> Image) throws -> ReferenceKindEvidence {
        if declared != nil || cameraUnknown { return given(declared, cameraUnknown: cameraUnknown) }
        return try detect(image())
    }

    /// A print when its tones are grey or sepia and a scanned print's border surrounds it; a photo otherwise (a grey
    /// photo alone is not a print). Tones are read at most 256 px on the longer side.
    public static func detect(_ image: Image) throws -> ReferenceKindEvidence {
        let (tone, chroma) = try tones(image)
        let border = try PrintBorder.detect(in: image) != nil
        let print = tone != .colour && border
        return ReferenceKindEvidence(kind: print ? .print : .photo, source: .detected, tone: tone, meanChroma: (chroma * 100).rounded() / 100, border: border)
    }

    /// Grey: mean chroma under 4 grey levels. Sepia: one warm tint, at least 90 % of the tinted pixels (chroma 4 or
    /// more, brightest channel 32 or more) red >= green >= blue, their saturation (chroma over the brightest channel)
    /// within 0.25 from the 10th to the 90th percentile and under 0.6 at the 90th: a tint scales with the tone, where
    /// a warm colour photo's saturation varies. Colour otherwise.
    static func tones(_ image: Image) throws -> (Tone, Double) {
        guard image.channels >= 3 else { return (.grey, 0) }
        let side = max(image.width, image.height)
        let scale = 256 / Double(side)
        let small = side > 256 ? try image.resized(width: max(1, Int((Double(image.width) * scale).rounded())), height: max(1, Int((Double(image.height) * scale).rounded()))) : image
        let pixels = try small.pixels()
        let step = small.channels
        var sum = 0.0, count = 0, warm = 0
        var saturations: [Double] = []
        var i = 0
        while i + 2 < pixels.count {
            let (b, g, r) = (Int(pixels[i]), Int(pixels[i + 1]), Int(pixels[i + 2]))
            let high = max(b, g, r), chroma = high - min(b, g, r)
            sum += Double(chroma)
            count += 1
            if chroma >= 4 && high >= 32 {
                saturations.append(Double(chroma) / Double(high))
                if r >= g && g >= b { warm += 1 }
            }
            i += step
        }
        let mean = count > 0 ? sum / Double(count) : 0
        if mean < 4 { return (.grey, mean) }
        saturations.sort()
        guard !saturations.isEmpty, Double(warm) >= 0.9 * Double(saturations.count) else { return (.colour, mean) }
        let p10 = saturations[saturations.count / 10], p90 = saturations[saturations.count * 9 / 10]
        return (p90 - p10 <= 0.25 && p90 < 0.6 ? .sepia : .colour, mean)
    }
}
