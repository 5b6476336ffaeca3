/// One instruction of the guidance as an app acts on it: what to do, which way, how much. The hint a person reads is
/// `text`, made from the action alone (the one place hints are worded), so the two never say different things.
/// Each kind has one unit (`Kind.unit`), so an action's unit cannot contradict its kind. JSON: docs/json-output.md.
public struct GuidanceAction: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// Pan the camera `left` / `right`: the reference view's centre lies that far off the target's.
        case turn
        /// Tilt the camera `up` / `down`, the same way.
        case tilt
        /// Rotate the camera about its viewing axis, `clockwise` / `counterClockwise`.
        case roll
        /// The old photo's lens is unlike today's: zoom `in` / `out` to the factor (no step makes up for it).
        case zoom
        /// Move the camera `forward` / `back`: the reference view is too small / too large.
        case move
        /// The old photo's lens is not determined: zoom `in` or move forward / zoom `out` or move back, which one not known.
        case zoomOrMove
        /// Move `left` / `right` / `up` / `down` around the subject (keystone, once the view is centred); the amount
        /// is the keystone, which the hint does not state.
        case orbit
        /// The reference view is not in front of the camera: no direction or amount.
        case findSubject
        /// A guidance session's step to the vantage point: `left` / `right` / `forward` / `back`.
        case step
        /// The same step's height: `up` raises the camera, `down` lowers it.
        case raise

        /// The unit of the kind's amount; nil for `findSubject`, which has none.
        public var unit: Unit? {
            switch self {
            case .turn, .tilt: .percentOfWidth
            case .roll: .degrees
            case .zoom: .factor
            case .move, .zoomOrMove: .percentOfSize
            case .orbit: .keystonePercent
            case .step, .raise: .percentOfDistance
            case .findSubject: nil
            }
        }
    }

    public enum Direction: String, Codable, Sendable, CaseIterable {
        case left, right, up, down, forward, back, clockwise, counterClockwise, `in`, out
    }

    public enum Unit: String, Codable, Sendable, CaseIterable {
        /// Percent of the current frame's width (both axes, so they compare).
        case percentOfWidth
        case degrees
        /// The zoom to set, relative to the current camera's (1.6: zoom in to 1.6x; 0.67: out to 0.67x).
        case factor
        /// Percent by which the reference view's side is larger (`back`, `out`) or smaller (`forward`, `in`) than
        /// the target's, lens accounted for.
        case percentOfSize
        /// The difference of the reference view's opposite edges over their mean × 100 (`navigation.keystone…Percent`,
        /// unsigned).
        case keystonePercent
        /// Percent of the distance to the subject (the structure's median depth).
        case percentOfDistance
    }

    public var kind: Kind
    /// Nil only for `findSubject`.
    public var direction: Direction?
    /// Positive, in `unit`; nil only for `findSubject`.
    public var amount: Double?
    public var unit: Unit? { kind.unit }

    public init(_ kind: Kind, _ direction: Direction? = nil, amount: Double? = nil) {
        self.kind = kind
        self.direction = direction
        self.amount = amount
    }

    /// The hint for a person. Today's English wording: existing outputs' hints are unchanged.
    public var text: String {
        let n = amount.map { fmt($0, 2) } ?? "?"
        let way = direction.map { $0 == .counterClockwise ? "counter-clockwise" : $0.rawValue } ?? "?"
        switch kind {
        case .turn, .tilt:
            return "\(kind.rawValue) \(way) (\(n)% of width)"
        case .roll:
            return "roll \(way) \(n)°"
        case .zoom:
            return direction == .out
                ? "the old photo was taken with a wider lens: zoom out to about \(n)x, or use a wider lens (stepping back changes the perspective)"
                : "the old photo was taken with a longer lens: zoom in about \(n)x (stepping closer changes the perspective)"
        case .move:
            return "move \(way) (view \(n)% too \(direction == .back ? "large" : "small"))"
        case .zoomOrMove:
            let size = "view \(n)% too \(direction == .out ? "large" : "small")"
            return "\(direction == .out ? "zoom out or move back" : "zoom in or move forward") (\(size); the old photo's lens is not determined, so which one is not known)"
        case .orbit:
            return "move \(way) around the subject"
        case .findSubject:
            return "the reference view is not in front of the camera: point the camera at the subject"
        case .step:
            return "step \(way) (\(n)% of the distance to the subject)"
        case .raise:
            return "\(direction == .down ? "lower" : "raise") the camera (\(n)% of the distance to the subject)"
        }
    }

    // Every key always present (null where absent), so a client reads one shape; the unit follows from the kind.
    enum CodingKeys: String, CodingKey { case kind, direction, amount, unit }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(direction, forKey: .direction)
        try c.encode(amount, forKey: .amount)
        try c.encode(unit, forKey: .unit)
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(Kind.self, forKey: .kind)
        direction = try c.decodeIfPresent(Direction.self, forKey: .direction)
        amount = try c.decodeIfPresent(Double.self, forKey: .amount)
    }
}
