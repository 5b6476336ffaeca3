import Foundation
import Testing
import RephotoKit
import RephotoEvaluation

/// A space's configurations are built from their index: the same trials, in the same order, as listing them
/// all (a grid nested loop; random draws one after another), without the list.
@Suite struct TuningSpaceTests {
    static func text(_ strategy: String) -> String {
        """
        \(strategy)
        parameters:
          matching.ratio: [0.6, 0.7, 0.8]
          homography.threshold: {min: 1, max: 4, step: 1}
          pose.essential.threshold: [0.5, 2]
        """
    }

    /// A rotation in the form `rephoto defaults --yaml` prints it, fixed or varied (it was refused as "must be a
    /// single value", found by probing), or as one string as before.
    /// A misspelt parameter in a space file is named with the registry's nearest ("did you mean"), as `--set` is.
    @Test func aMisspeltParameterIsNamedWithItsNearest() throws {
        let error = #expect(throws: RephotoError.self) { try TuningSpace.parse("parameters: {matching.ratoi: [0.7, 0.8]}") }
        #expect(error?.message == "unknown parameter 'matching.ratoi' (did you mean 'matching.ratio'?) (rephoto defaults lists them)", "\(String(describing: error))")
        let far = #expect(throws: RephotoError.self) { try TuningSpace.parse("parameters: {zzzz: [1]}") }
        #expect(far?.message == "unknown parameter 'zzzz' (rephoto defaults lists them)")
    }

    @Test func aRotationIsWrittenAsDefaultsPrintsIt() throws {
        let space = try TuningSpace.parse("""
            fixed: {sensor.cameraFromDevice: [[1, 0, 0], [0, -1, 0], [0, 0, -1]]}
            parameters: {matching.ratio: [0.7, 0.8]}
            """)
        #expect(space.fixed.map(\.value) == [.matrix(Matrix3(rows: [[1, 0, 0], [0, -1, 0], [0, 0, -1]]))])
        let varied = try TuningSpace.parse("""
            parameters:
              sensor.cameraFromDevice: [[[0, 1, 0], [-1, 0, 0], [0, 0, 1]], "[[1,0,0],[0,1,0],[0,0,1]]"]
            """)
        #expect(varied.dimensions.first?.values == [.matrix(Matrix3(rows: [[0, 1, 0], [-1, 0, 0], [0, 0, 1]])), .matrix(.identity)])
        #expect(throws: RephotoError.self) { try TuningSpace.parse("fixed: {sensor.cameraFromDevice: [[1, 0], [0, 1]]}\nparameters: {matching.ratio: [0.7]}") }
    }

    @Test func gridTrialsAreTheNestedLoopInFileOrder() throws {
        let space = try TuningSpace.parse(Self.text("strategy: grid"))
        var listed: [[String]] = [[]]
        for dimension in space.dimensions {
            listed = listed.flatMap { prefix in dimension.values.map { prefix + ["\(dimension.path)=\($0)"] } }
        }
        let configurations = try space.configurations()
        #expect(configurations.count == 24)
        #expect(configurations.map { $0.map { "\($0.path)=\($0.value)" } } == listed)
        #expect(configurations[5].map(\.value) == [.double(0.6), .double(3), .double(2)])
    }

    @Test func randomTrialsAreTheDrawsInSequence() throws {
        for strategy in ["strategy: random\ntrials: 50\nseed: 9", "strategy: halving\ntrials: 50\nseed: 9"] {
            let space = try TuningSpace.parse(Self.text(strategy))
            var random = SeededRandom(seed: 9)
            let drawn = (0..<50).map { _ in space.dimensions.map { "\($0.path)=\($0.values[Int(random.next() % UInt64($0.values.count))])" } }
            let configurations = try space.configurations()
            #expect(configurations.map { $0.map { "\($0.path)=\($0.value)" } } == drawn)
            #expect(configurations[49].map { "\($0.path)=\($0.value)" } == drawn[49])
        }
    }

    /// A million configurations: any one at once, none listed.
    /// A choice is a word, quoted or not (a number in quotes is refused: TuneCommandTests).
    @Test func aQuotedChoiceIsTheWord() throws {
        let space = try TuningSpace.parse("parameters: {features.detector: [\"orb\", akaze]}")
        #expect(try space.configurations().map { $0.map(\.value) } == [[.string("orb")], [.string("akaze")]])
    }

    @Test func aMillionConfigurationGridIsIndexedNotListed() throws {
        let space = try TuningSpace.parse("""
            parameters:
              features.maxKeypoints: {min: 1000, max: 1099, step: 1}
              features.orb.features: {min: 1, max: 100, step: 1}
              pose.minInliers: {min: 10, max: 109, step: 1}
            """)
        let configurations = try space.configurations()
        #expect(configurations.count == 1_000_000)
        #expect(configurations[123_456].map(\.value) == [.int(1012), .int(35), .int(66)])
        #expect(configurations[999_999].map(\.value) == [.int(1099), .int(100), .int(109)])
    }
}
