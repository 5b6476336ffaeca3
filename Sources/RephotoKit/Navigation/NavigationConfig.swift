/// Navigation settings (Shi et al. 2018); defaults and ranges are declared in `ParameterRegistry`.
public struct NavigationConfig: Equatable, Sendable {
    /// Side of the target rectangle as a fraction of the frame's (Shi et al.: 3/5).
    public var targetFraction: Double = ParameterRegistry.defaultValue(\.navigation.targetFraction)
    /// `aligned` when every quadrilateral corner lies within this percentage of the frame width of its target corner.
    public var alignedTolerancePercent: Double = ParameterRegistry.defaultValue(\.navigation.alignedTolerancePercent)

    public init() {}
}
