import ArgumentParser
import RephotoKit

// Command-line parsing of the core's enums, shared by `rephoto synth` and the other commands.
extension ScreenOrientation: ExpressibleByArgument {}
extension AttitudeReferenceFrame: ExpressibleByArgument {}
extension DetectorKind: ExpressibleByArgument {}
extension ReferenceKind: ExpressibleByArgument {}
