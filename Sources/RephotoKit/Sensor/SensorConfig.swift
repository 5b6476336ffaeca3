/// How the camera sits in the device. `cameraFromDevice` maps device-frame vectors to OpenCV camera axes
/// (x right, y down, z forward) for a portrait capture; the default (declared in `ParameterRegistry`) is a
/// phone's back camera: image right = device x, image down = −device y, viewing direction = −device z.
public struct SensorConfig: Equatable, Sendable {
    public var cameraFromDevice: Matrix3 = ParameterRegistry.defaultValue(\.sensor.cameraFromDevice)

    public init() {}

    /// Camera-from-device rotation for a capture in `orientation`.
    package func cameraFromDevice(_ orientation: ScreenOrientation) -> Matrix3 { orientation.aboutViewingAxis * cameraFromDevice }
}
