import Foundation

/// Every tunable of the pipeline, declared once: path, type, default, allowed values, tuning scale and a
/// one-line description. Config decoding and encoding, validation, `rephoto defaults`, the parameter table
/// of docs/configuration.md and the tuner all read this list; the config structs take their defaults from it.
public enum ParameterRegistry {
    public static let parameters: [Parameter] = [
        // features: OpenCV 4.6's AKAZE::create, ORB::create and SIFT::create parameters, with OpenCV's defaults.
        .choice("features.detector", \.features.detector, DetectorKind.akaze, "feature detector and descriptor"),
        // 1600 from scripts/bench-memory: on Strecha's 28 pairs at least as accurate as full size (3072 px),
        // and a 12 MP pair stays near 350 MB and 1 s; docs/decisions.md has the table.
        .optionalInteger("features.maxDimension", \.features.maxDimension, 1600, min: 16, max: 1 << 20,
                         "analysis scale: detect on a copy downscaled so its longer side is at most this many pixels (null: full size)"),
        .optionalReal("features.scale", \.features.scale, above: 0, atMost: 1,
                      "analysis scale as a factor (null: 1); with maxDimension too, the smaller scale wins"),
        // Matching is quadratic in it: 28,000 keypoints a side (AKAZE threshold 1e-5) took 1.8 s to match, against
        // 8 ms for the 2,400 of the default threshold. 20,000 is over the count of any default detector at 1600 px.
        .integer("features.maxKeypoints", \.features.maxKeypoints, 20_000, min: 0, max: 1_000_000,
                 "keep at most this many keypoints per image, the strongest responses first (0 = all)"),
        .real("features.clahe", \.features.clahe, 0, atLeast: 0, atMost: 40,
              "contrast-limited adaptive histogram equalisation of both images before detection, for faded, low-contrast prints: its clip limit (2-4 typical, on tiles of about 128 analysis pixels); 0: none"),
        // 3 from aged Herz-Jesu prints: with the true camera mAA@10 0.28 -> 0.72, with it unknown 0 -> 0.05 (rotation
        // 0 -> 0.36); synthetic old prints 0.14 -> 0.88 (scripts/bench-old-photos; docs/decisions.md, "Old photos").
        .real("features.oldPhotoClahe", \.features.oldPhotoClahe, 3, atLeast: 0, atMost: 40,
              "the CLAHE clip limit used in place of features.clahe, when that is 0, for an old print (a reference of kind print: declared, detected, or of unknown camera) and the frames matched against it; 0: none"),
        // 0.3 from aged Herz-Jesu prints (AKAZE 0.001 -> 0.0003): mAA@10 without the camera 0.25 -> 0.37 grey, 0.06 -> 0.14
        // sepia; 0.1 and 0.5 less on one set or both (docs/decisions.md, "Old photos").
        .real("features.oldPhotoThresholdScale", \.features.oldPhotoThresholdScale, 0.3, above: 0, atMost: 1, scale: .log,
              "the factor on features.akaze.threshold and features.sift.contrastThreshold for an old print (a reference of kind print) and the frames matched against it, whose faded corners respond weakly; ORB is not affected; 1: none"),
        // On from aged Herz-Jesu prints (scripts/bench-old-photos): mAA@10 grey 0.404 -> 0.557, harsh 0.129 -> 0.215, its
        // pairs at most three views apart 0.200 -> 0.304; strecha-aged-rolled at 15° of roll 0.443 -> 0.171 (docs/decisions.md).
        .flag("features.oldPhotoUpright", \.features.oldPhotoUpright, true,
              "AKAZE's upright descriptors (no keypoint orientation) for an old print (a reference of kind print) and the frames matched against it: a blurred, grainy print's orientations are noise; assumes the two held level alike, within about 10° of roll (at 15° most answers are lost); ORB and SIFT are not affected"),
        // 1.3 from two sets of aged Herz-Jesu prints (895 and 1,150 px against frames analysed at 1,600): homography
        // inliers 1,034 -> 1,285 and 1,633 -> 1,826, rotation mAA@10 0.26 -> 0.36 on both (docs/decisions.md, "Old photos").
        .real("features.currentScaleToReference", \.features.currentScaleToReference, 1.3, atLeast: 0, atMost: 100,
              "the current frame is analysed at no more than this many times the reference's analysed longer side (and never below 1,000 px by this rule), so that a small reference (an old print) meets it at a comparable pixel scale; no effect on references as large as the frame; 0: off"),
        .choice("features.referenceBorder", \.features.referenceBorder, BorderMode.auto,
                "a scanned print's border around the reference (white, cream, grey or black, slightly rotated at most): found, left out of detection and reported as referenceBorder, its box's centre an unknown camera's principal point; auto: on prints (a reference of kind print: declared, detected, or of unknown camera)"),
        .choice("features.akaze.descriptorType", \.features.akaze.descriptorType, AKAZEParameters.DescriptorType.mldb, "AKAZE descriptor"),
        .integer("features.akaze.descriptorSize", \.features.akaze.descriptorSize, 0, min: 0, max: 486,
                 "MLDB descriptor bits, 0 = full size (162 per channel)"),
        // OpenCV 4.6's MLDB corrupts its heap with 1 channel and asserts on the full-size descriptor with fewer than 3.
        .integer("features.akaze.descriptorChannels", \.features.akaze.descriptorChannels, 3, min: 2, max: 3,
                 "MLDB descriptor channels (2 only with a descriptorSize above 0: OpenCV 4.6 fails on 1, and on a full-size descriptor of 2)"),
        .real("features.akaze.threshold", \.features.akaze.threshold, 0.001, above: 0, below: 1, scale: .log, "AKAZE detector response threshold"),
        .integer("features.akaze.octaves", \.features.akaze.octaves, 4, min: 1, max: 10, "AKAZE scale-space octaves"),
        .integer("features.akaze.octaveLayers", \.features.akaze.octaveLayers, 4, min: 1, max: 10, "AKAZE sublevels per octave"),
        .choice("features.akaze.diffusivity", \.features.akaze.diffusivity, AKAZEParameters.Diffusivity.pmG2, "AKAZE diffusivity function"),
        .integer("features.orb.features", \.features.orb.features, 500, min: 1, max: 1_000_000, "ORB: maximum number of features"),
        .real("features.orb.scaleFactor", \.features.orb.scaleFactor, 1.2, above: 1, atMost: 4, "ORB pyramid decimation ratio"),
        .integer("features.orb.levels", \.features.orb.levels, 8, min: 1, max: 32, "ORB pyramid levels"),
        .integer("features.orb.edgeThreshold", \.features.orb.edgeThreshold, 31, min: 0, max: 1024, "ORB border without features, pixels"),
        .integer("features.orb.firstLevel", \.features.orb.firstLevel, 0, min: 0, max: 31, "ORB pyramid level of the source image (< levels)"),
        .integer("features.orb.wtaK", \.features.orb.wtaK, 2, min: 2, max: 4, "ORB points per BRIEF comparison (3 and 4 use Hamming2)"),
        .choice("features.orb.scoreType", \.features.orb.scoreType, ORBParameters.ScoreType.harris, "ORB keypoint ranking"),
        .integer("features.orb.patchSize", \.features.orb.patchSize, 31, min: 2, max: 1024, "ORB BRIEF patch size, pixels"),
        .integer("features.orb.fastThreshold", \.features.orb.fastThreshold, 20, min: 0, max: 255, "ORB FAST threshold, grey levels"),
        .integer("features.sift.features", \.features.sift.features, 0, min: 0, max: 1_000_000, "SIFT: best features to keep, 0 = all"),
        .integer("features.sift.octaveLayers", \.features.sift.octaveLayers, 3, min: 1, max: 10, "SIFT layers per octave"),
        .real("features.sift.contrastThreshold", \.features.sift.contrastThreshold, 0.04, above: 0, below: 1, scale: .log, "SIFT contrast threshold"),
        .real("features.sift.edgeThreshold", \.features.sift.edgeThreshold, 10, above: 0, atMost: 1000, scale: .log, "SIFT edge threshold"),
        .real("features.sift.sigma", \.features.sift.sigma, 1.6, atLeast: 0.01, atMost: 10, "SIFT Gaussian sigma of octave 0, pixels"),
        .choice("features.sift.descriptorType", \.features.sift.descriptorType, SIFTParameters.DescriptorType.float32, "SIFT descriptor element type"),

        // matching
        .choice("matching.matcher", \.matching.matcher, MatchConfig.Matcher.bruteForce,
                "brute_force (exact), flann (approximate) or opencv_brute_force (cv::BFMatcher, for checks)"),
        .real("matching.ratio", \.matching.ratio, 0.8, above: 0, atMost: 1, "Lowe's ratio test on the two nearest neighbours; 1 disables it"),
        .flag("matching.mutual", \.matching.mutual, false, "keep only pairs that are each other's nearest neighbour"),
        // 0.9 from scripts/bench-old-photos: mAA@10 grey 0.393 -> 0.404, sepia 0.186 -> 0.321, varied 0.399 -> 0.461,
        // harsh 0.076 -> 0.129 (off -> on); 0.95 scored 0.404 / 0.286 / 0.456 / 0.133 (docs/decisions.md, "The epipolar pass").
        .real("matching.oldPhotoEpipolarRatio", \.matching.oldPhotoEpipolarRatio, 0.9, atLeast: 0, atMost: 1,
              "an old print (a reference of kind print): a second pass takes the matches passing Lowe's ratio at this looser value that agree (within pose.referenceFocal.threshold, Sampson) with a fundamental matrix fitted robustly to the first pass's, and they join the first pass's; no effect at or below matching.ratio; 0: none"),
        .real("matching.guidedRadius", \.matching.guidedRadius, 5, above: 0, atMost: 100,
              "with marked points (--points): a second matching pass compares each current keypoint only with the reference keypoints within this radius (% of the reference's longer side) of where the marks' homography puts it, Lowe's ratio taken among those; its matches join the first pass's"),
        .real("matching.markTolerance", \.matching.markTolerance, 1.5, above: 0, atMost: 100,
              "marked points farther than this from the pose found (their epipolar distance; % of the current image's longer side) are refused as inconsistent, by number"),
        .integer("matching.lshTableNumber", \.matching.lshTableNumber, 6, min: 1, max: 64, "FLANN LSH hash tables (binary descriptors)"),
        // FLANN keeps a bitset of 2^bits per table: 32 bits took 23 GB, 24 take 2 MB a table.
        .integer("matching.lshKeySize", \.matching.lshKeySize, 12, min: 1, max: 24, "FLANN LSH key bits"),
        .integer("matching.lshMultiProbeLevel", \.matching.lshMultiProbeLevel, 1, min: 0, max: 4, "FLANN LSH multi-probe level"),
        .integer("matching.kdTrees", \.matching.kdTrees, 5, min: 1, max: 64, "FLANN KD-trees (float descriptors)"),
        // More checks cost more than exact matching: SIFT on a Strecha pair (5,013 keypoints) matched in 0.15 s by
        // brute force, 1.0 s by FLANN at 1,000 checks, 10.5 s at 10,000 (and 1,000,000 ran for minutes).
        .integer("matching.flannChecks", \.matching.flannChecks, 50, min: 1, max: 2_000, "FLANN leaves checked per search (beyond about 1,000, exact matching is faster)"),

        // robust estimators
        .choice("homography.method", \.homography.method, RobustMethod.usacMagsac, allowed: RobustMethod.homographyMethods,
                "robust estimator of H (usac_magsac = MAGSAC++)"),
        .real("homography.threshold", \.homography.threshold, 3, above: 0, atMost: 1000, scale: .log, "inlier threshold: transfer error, full-resolution pixels"),
        .real("homography.confidence", \.homography.confidence, 0.995, above: 0, below: 1, "required confidence"),
        .integer("homography.maxIterations", \.homography.maxIterations, 2000, min: 1, max: 1_000_000, scale: .integer, "iteration cap"),
        .choice("pose.essential.method", \.pose.search.essential.method, RobustMethod.loMsac, allowed: RobustMethod.essentialMethods,
                "robust estimator of E: lo_msac (five-point LO-MSAC, ours) or one of OpenCV's"),
        .real("pose.essential.threshold", \.pose.search.essential.threshold, 1, above: 0, atMost: 1000, scale: .log,
              "inlier threshold: Sampson distance, full-resolution pixels (divided by the mean focal length)"),
        .real("pose.essential.confidence", \.pose.search.essential.confidence, 0.9999, above: 0, below: 1,
              "required confidence (lo_msac: of having drawn one all-inlier sample)"),
        // 20,000, not 10,000 (scripts/bench-accuracy, 6 seeds): weak wide pairs reach their 10-inlier pose more
        // often (Strecha full resolution mAA@10 0.917 -> 0.933, 1280 px 0.923 -> 0.925, synthetic orbits 0.701 ->
        // 0.703, no wrong answer either way); only pairs that never certify run longer (p99 at 1280 px 143 -> 207 ms).
        .integer("pose.essential.maxIterations", \.pose.search.essential.maxIterations, 20_000, min: 1, max: 1_000_000, scale: .log,
                 "iteration cap (lo_msac: of the samples solved, those pose.screenDegrees turns away not counted)"),
        // 1,000 (PoseLib's minimum too), not 100: the adaptive bound certifies that an all-inlier sample was drawn, not
        // that LO reached the bottom of its basin, and more new-best samples give LO more starts. On the synthetic
        // 60° orbit the pose had stopped 3-5 inliers' worth above PoseLib's cost in its basin (100.5-103 against
        // 97-98), so that a rival 82° away came within the margin. scripts/bench-accuracy's exports, 48 seeds (two
        // seed sets), gated mAA@10 for 100 / 500 / 1,000: orbits 0.701 / 0.710 / 0.714, Strecha 1280 px 0.965 /
        // 0.965 / 0.964, full resolution 0.940 for all; confident wrong answers over all sets 4 / 3 / 2.
        // 2,000 (24 seeds) lost Strecha's widest pairs at 1280 px to lower-cost poses further from the truth (0.957).
        // Median estimator time 2.7-3.3 -> 7.7-9.2 ms (PoseLib 23-52 ms); p99 unchanged (capped searches).
        .integer("pose.minIterations", \.pose.search.minIterations, 1000, min: 0, max: 1_000_000, scale: .log,
                 "lo_msac: samples solved whatever the adaptive stopping bound says"),
        .integer("pose.seed", \.pose.search.seed, 0, min: 0, max: Int.max, scale: .fixed, "lo_msac: seed of the sampler"),
        .real("pose.maxDisagreement", \.pose.search.maxDisagreement, 0, atLeast: 0, atMost: 180,
              "lo_msac: when the search ends uncertified, a second (half the cap) finding a lower cost further than this rotation (5x in translation) fails the pose, degrees; 0: off"),
        .integer("pose.runnersUp", \.pose.search.runnersUp, 16, min: 0, max: 1_000,
                 "lo_msac: minimal models kept besides the best; a search optimises those from other basins (10° or more from its rotation; all of them when it ends uncertified) and takes the best, and pose.minRivalExcess looks among them (0: none)"),
        // Measured on Strecha's widest AKAZE pairs at 1280 px (the CShims Screen's comment): 60° and 1.5 octaves pass
        // 4-9 % of the samples and 65-100 % of the all-inlier ones.
        .real("pose.screenDegrees", \.pose.search.screenDegrees, 60, atLeast: 0, atMost: 360,
              "lo_msac: a sample is solved only when its keypoints' orientations turn alike within this many degrees (largest minus smallest change) and their scales within pose.screenOctaves; the stopping rule allows for the all-inlier samples turned away, pose.essential.maxIterations caps the samples solved and 16 times as many may be drawn; 0: off (also for keypoints without orientation)"),
        .real("pose.screenOctaves", \.pose.search.screenOctaves, 1.5, above: 0, atMost: 20,
              "lo_msac: the sample screen's bound on how differently its keypoints' scales change (log2, largest minus smallest)"),
        .flag("pose.prosac", \.pose.search.prosac, true, "lo_msac: draw samples from the best matches first (PROSAC, in pose.prosacOrder)"),
        // distance: ratio was better at 1280 px and worse elsewhere (docs/decisions.md, "PROSAC's order").
        .choice("pose.prosacOrder", \.pose.search.prosacOrder, ProsacOrder.distance,
                "lo_msac: PROSAC's order of the matches, by Lowe's ratio (nearest over second-nearest distance) or by descriptor distance"),
        .flag("pose.refine", \.pose.search.refine, true, "Levenberg-Marquardt on the MSAC cost of the Sampson error after the estimator"),
        // docs/decisions.md, "The Cauchy polish": real matches' errors within the threshold are heavy-tailed, and
        // on Strecha at full resolution the polish cut the per-pair errors by 12-18 % (PoseLib ends the same way).
        .real("pose.cauchyScale", \.pose.search.cauchyScale, 0.7, atLeast: 0, atMost: 100,
              "lo_msac with pose.refine: then a polish on a Cauchy loss of the Sampson errors within the threshold, its scale this many times their robust noise (1.4826 x median, at least 0.1 px); a move of 5° or more is not taken; 0: none"),
        .integer("pose.minInliers", \.pose.thresholds.minInliers, 10, min: 5, max: 100_000, "gate: fewer essential inliers in front of both cameras fails the pose"),
        .real("pose.maxChance", \.pose.thresholds.maxChance, 1e-8, above: 0, atMost: 1, scale: .log,
              "gate: fails the pose when unrelated matches would give as many inliers with at least this expectation"),
        .real("pose.maxCorroboratedChance", \.pose.thresholds.maxCorroboratedChance, 0.01, above: 0, atMost: 1, scale: .log,
              "gate: a pose over pose.maxChance still passes under this chance when the sensor's relative rotation is within pose.maxSensorDisagreement of it"),
        .real("pose.maxSensorDisagreement", \.pose.thresholds.maxSensorDisagreement, 5, atLeast: 0, atMost: 15,
              "gate: the largest angle between the pose's rotation and the sensor's relative rotation that corroborates a pose (pose.maxCorroboratedChance), and half the least that lets the sensor settle a rival (pose.minRivalExcess) or a plane's other solution, degrees; 0: the sensor does none of these; at most 15, since wrong models of 10-13 inliers land 9° or more from the truth and a wider tolerance passes them (at 30°, a pose 55° wrong)"),
        .integer("pose.sensorGuidedSamples", \.pose.thresholds.sensorGuidedSamples, 1000, min: 0, max: 100_000,
                 "lo_msac with the sensor's rotation: a pose too weak for pose.maxChance is also sought within pose.maxSensorDisagreement of that rotation, turned about the vertical of the reference attitude, with this many three-point samples; the pose found replaces one the sensor rules out, or another answer 10° or more away that it fits better; 0: never"),
        .real("pose.maxGuidedChance", \.pose.thresholds.maxGuidedChance, 1e-6, above: 0, atMost: 1, scale: .log,
              "gate: a pose the sensor-guided search found passes over pose.maxChance only under this chance, counted over that search's samples; the sensor's agreement does not count for it (the search looked only near the sensor)"),
        .real("pose.maxReproducedChance", \.pose.thresholds.maxReproducedChance, 1e-4, above: 0, atMost: 1, scale: .log,
              "gate: a pose over pose.maxChance still passes under this chance when pose.reproductions more searches (other seeds) reach it, within pose.maxReproductionDegrees"),
        .integer("pose.reproductions", \.pose.thresholds.reproductions, 2, min: 0, max: 8,
                 "searches (half the cap each) that must reach a pose the chance gate would refuse, for pose.maxReproducedChance, and, with the sensor's rotation, one the sensor corroborates (pose.maxCorroboratedChance) for its translation to be reported; each stops on reaching the pose; 0: none run"),
        .integer("pose.reproductionMisses", \.pose.thresholds.reproductionMisses, 1, min: 0, max: 8,
                 "searches for pose.reproductions that may end elsewhere before the pose fails; 0: the first that does fails it"),
        .real("pose.maxReproductionDegrees", \.pose.thresholds.maxReproductionDegrees, 5, above: 0, atMost: 180,
              "gate: the largest rotation between a weak pose and a search that reproduces it, degrees"),
        .real("pose.referenceFocal.threshold", \.pose.referenceFocal.threshold, 2, above: 0, atMost: 100, scale: .log,
              "a reference from an unknown camera: inlier distance of the relative poses scanned over its focal length (Sampson) and of the rotation homography, pixels"),
        // The scan's search at each of its ~40 focal lengths: 400 and 100 samples and one seed for all of them, the
        // settings the scan was measured with (docs/decisions.md, "Old photos"); the same seed keeps neighbouring focal
        // lengths apart by their fit, not by the sampler's luck.
        .integer("pose.referenceFocal.maxIterations", \.pose.referenceFocal.maxIterations, 400, min: 1, max: 1_000_000, scale: .log,
                 "a reference from an unknown camera: samples solved, at most, by the robust essential-matrix search at each focal length its scan tries"),
        .integer("pose.referenceFocal.minIterations", \.pose.referenceFocal.minIterations, 100, min: 0, max: 1_000_000, scale: .log,
                 "a reference from an unknown camera: samples its scan's search solves at each focal length whatever the adaptive stopping bound says"),
        .integer("pose.referenceFocal.seed", \.pose.referenceFocal.seed, 0x5_EEDF_0CA1, min: 0, max: Int.max, scale: .fixed,
                 "a reference from an unknown camera: seed of its scan's sampler, the same at every focal length"),
        .real("pose.referenceFocal.rotationShare", \.pose.referenceFocal.rotationShare, 0.95, atLeast: 0, atMost: 1,
              "a reference from an unknown camera: its focal length comes from a rotation (the cameras at one place) when a homography that is one (pose.referenceFocal.maxRotationGap) holds at least this share of a fundamental matrix's inliers; the relative poses' scan otherwise"),
        // 0.6: graf1 -> graf3, one plane, 0.68 (its focal length read 1.66x the truth at ± 2.5 %); the aged Strecha pairs
        // and synth's old prints at most 0.46 with 20 or more inliers (docs/decisions.md, "A plane fixes no focal length").
        .real("pose.referenceFocal.planeShare", \.pose.referenceFocal.planeShare, 0.6, above: 0, atMost: 1,
              "a reference from an unknown camera: when a homography that is no rotation holds at least this share of a fundamental matrix's inliers, the scene is one plane seen from apart, which fixes no focal length: the camera is undetermined and no pose is reported"),
        .real("pose.referenceFocal.maxRotationGap", \.pose.referenceFocal.maxRotationGap, 0.05, atLeast: 0, atMost: 10,
              "a reference from an unknown camera: a homography is a rotation when, at its best focal length f, M = K_current^-1 H diag(f, f, 1) has |M^T M / (trace / 3) - I| under this"),
        // 4 from scripts/age-references' crops (a principal point 2-4 % of the side off the centre): with the principal
        // point estimated, grey / sepia mAA@10 0.382 / 0.179 and no rotation over 10° wrong; 2 gave 0.414 / 0.175 with
        // one (docs/decisions.md, "Old photos").
        .real("pose.referenceFocal.principalPointSigma", \.pose.referenceFocal.principalPointSigma, 4, atLeast: 0, atMost: 50,
              "a reference from an unknown camera: the prior 1 sigma (% of its longer side) of its principal point about its centre (an old print is often cropped off-centre); estimated with the focal length where the relative pose allows, and the focal length's sigma includes its spread; 0: taken at the centre, as exact"),
        .integer("pose.referenceFocal.minInliers", \.pose.referenceFocal.minInliers, 50, min: 8, max: 100_000,
                 "a reference from an unknown camera: fewer inliers of the model its focal length comes from (the relative pose or the rotation) leave it undetermined and no pose is reported"),
        // 2.5 (with maxRotationShift 5): the 1 sigma covers the error on 66 % of bench-old-photos' pairs (38 % at 1), and
        // answers over 10° wrong fall 22 -> 10 at the same mAA@10 but grey's (docs/decisions.md, "An honest focal sigma").
        .real("pose.referenceFocal.minSigmaPercent", \.pose.referenceFocal.minSigmaPercent, 2.5, atLeast: 0, atMost: 100,
              "a reference from an unknown camera: the least 1 sigma (%) its focal length is given, for what the residuals' curvature does not see (a print's flatness, the scanner, the inliers as chosen); the pose's sensitivity to the focal length is checked at it"),
        .real("pose.referenceFocal.maxSigmaPercent", \.pose.referenceFocal.maxSigmaPercent, 10, above: 0, atMost: 1_000, scale: .log,
              "a reference from an unknown camera: above this spread of its estimated focal length (1 sigma, %) the camera is undetermined and no pose is reported"),
        // 3 from the aged Herz-Jesu prints' pairs at most three views apart, PoseLib's poses standing in for rephoto's:
        // the epipole's translation was accepted on 9 of 14 uncertain pairs, 8 within 10° (docs/decisions.md, "Old photos").
        .real("pose.referenceFocal.epipoleAgreement", \.pose.referenceFocal.epipoleAgreement, 3, atLeast: 0, atMost: 180,
              "a reference from an unknown camera whose pose's translation turns past pose.maxTranslationSigma with its focal length: the translation is taken from the current image's epipole of a fundamental matrix (it depends on no reference camera) when a pose at the focal length or at its ± 1 sigma lies within this many degrees of it; 0: never"),
        // 3: on bench-old-photos it refused five answers 26-34° wrong (focal lengths 94-208 % off) and three right
        // ones; 2 kept the wrong ones (docs/decisions.md, "The rotation's turn with the old camera").
        .real("pose.referenceFocal.spanInliers", \.pose.referenceFocal.spanInliers, 3, atLeast: 0, atMost: 100_000,
              "a reference from an unknown camera: the focal lengths of its scan whose best pose fits within this many inliers' worth of the best one's span its answer; when half that span (in log) exceeds pose.referenceFocal.maxSigmaPercent the focal length is undetermined and no pose is reported; 0: not checked"),
        // 5, measured with minSigmaPercent 2.5: the probe at ± 2.5 % turns right rotations further than at ± 1 %; at 3
        // harsh lost 0.033 of mAA@10, at 5 none (docs/decisions.md, "An honest focal sigma").
        .real("pose.referenceFocal.maxRotationShift", \.pose.referenceFocal.maxRotationShift, 5, above: 0, atMost: 180, scale: .log,
              "a reference from an unknown camera: fails the pose when its rotation turns more than this, degrees, as the focal length moves by its 1 sigma (the pose solved again there), and warns above half of it"),
        // 2: on bench-old-photos' harsh prints, a camera from one frame's answer (38 inliers) put two frames that could
        // not estimate their own 50° and 108° wrong; from two or more, nothing else changed (docs/decisions.md).
        .integer("pose.referenceFocal.shareMinFrames", \.pose.referenceFocal.shareMinFrames, 2, min: 0, max: 100_000,
                 "a reference from an unknown camera that several frames of a sequence share (rephoto evaluate): once at least this many frames' poses were answered, their cameras are combined (a weighted median of their focal lengths and principal points, pose.referenceFocal.shareSigmaFloor) and every frame of the reference is estimated again on that one camera, checked at its ± 1 sigma; 0: each frame estimates its own"),
        // 2: near pairs only (as the held-out set), mAA@10 against weights by inliers alone: grey 0.678 -> 0.789, harsh
        // 0.400 -> 0.430, sepia 0.617 -> 0.589; 1 (the sigma's own floor) and 3 did worse (docs/decisions.md).
        .real("pose.referenceFocal.shareSigmaFloor", \.pose.referenceFocal.shareSigmaFloor, 2, above: 0, atMost: 100, scale: .log,
              "a reference from an unknown camera shared by several frames (pose.referenceFocal.shareMinFrames): each frame's answer is weighed by its pose's inliers over the square of its focal length's sigma (%), that sigma taken as at least this"),
        // scan: on bench-old-photos' grey, sepia and harsh agings (140 pairs) the six-point loop (better) moved mAA@10
        // 0.721 -> 0.725, 0.546 -> 0.586 and 0.346 -> 0.329 at up to 4x the time: no case it wins (docs/decisions.md).
        .choice("pose.referenceFocal.solver", \.pose.referenceFocal.solver, ReferenceFocalSolver.scan,
                "a reference from an unknown camera whose cameras stand apart: its focal length from the scan over focal lengths (scan), from six-point samples with the focal length free inside the robust loop and a joint refinement of pose, focal length and principal point (sixPoint), or both, keeping the one that fits every correspondence better (better)"),
        .integer("pose.referenceFocal.sixPointIterations", \.pose.referenceFocal.sixPointIterations, 2000, min: 1, max: 1_000_000, scale: .log,
                 "a reference from an unknown camera: samples solved, at most, by the robust loop of six-point samples with its focal length free (pose.referenceFocal.solver); at least pose.referenceFocal.minIterations"),
        .real("pose.referenceFocal.sigmaScale", \.pose.referenceFocal.sigmaScale, 1, above: 0, atMost: 100, scale: .log,
              "a reference from an unknown camera: its focal length's 1 sigma (from the model's covariance or curvature) is multiplied by this, so that it covers the error on about 68 % of pairs"),
        .real("pose.maxRotationSigma", \.pose.thresholds.maxRotationSigma, 2, above: 0, atMost: 180, scale: .log,
              "gate: fails the pose when the rotation's 1-sigma uncertainty exceeds this, and warns above half of it, degrees"),
        .real("pose.minRivalExcess", \.pose.thresholds.minRivalExcess, 1, atLeast: 0, atMost: 1_000,
              "gate: fails the pose when a rival 10° or more away (an optimised runner-up of the search, or the pose the plane's other solution replaced) fits within this many inliers' worth of MSAC cost; 0: off"),
        // Noise alone left the losing one of two equally supported motions 0.15-9 inliers' worth behind, and 17 of 20
        // seeds within 5 (aSensorThatBacksANearRivalChoosesIt): there the fit cannot tell them apart, the sensor can.
        // Not more, since a phone's heading can be off by tens of degrees and would then pick a rival near it.
        .real("pose.sensorRivalExcess", \.pose.thresholds.sensorRivalExcess, 5, atLeast: 0, atMost: 1_000,
              "lo_msac with the sensor's rotation: a runner-up that fits within this many inliers' worth of MSAC cost of the pose (or within pose.minRivalExcess, the larger), has pose.minInliers inliers and its well-triangulated inliers decisively in front, becomes the pose when the sensor's rotation is within pose.maxSensorDisagreement of it and more than twice that from the pose; the gate reports the choice when the two are 10° or more apart (a rival)"),
        .real("pose.maxParallax", \.pose.thresholds.maxParallax, 100, above: 0, atMost: 180,
              "lo_msac skips hypotheses whose sample exceeds this parallax, and the gate fails a pose whose inliers' median does, degrees"),
        .integer("pose.minTwinRefutation", \.pose.thresholds.minTwinRefutation, 5, min: 1, max: 100_000,
                 "planar (translation undetermined) when GRIC prefers a homography and fewer net inliers than this refute the plane's other solution"),
        .real("pose.maxTranslationSigma", \.pose.thresholds.maxTranslationSigma, 5, above: 0, atMost: 180, scale: .log,
              "translation reported as undetermined when its direction's 1-sigma uncertainty exceeds this (rotation-only when a pure rotation explains the inliers), degrees"),

        // navigation and sensor
        .real("navigation.targetFraction", \.navigation.targetFraction, 0.6, atLeast: 0.01, atMost: 1,
              "side of the target rectangle as a fraction of the frame's (Shi et al.: 3/5)"),
        .real("navigation.alignedTolerancePercent", \.navigation.alignedTolerancePercent, 1, above: 0, atMost: 100,
              "aligned when every corner is within this percentage of the frame width"),
        .rotation("sensor.cameraFromDevice", \.sensor.cameraFromDevice, Matrix3(rows: [[1, 0, 0], [0, -1, 0], [0, 0, -1]]),
                  "device axes to camera axes in portrait (default: a phone's back camera)"),

        // guidance sessions (GuidanceSession): tracking between robust updates, structure, the step
        .integer("session.robustEvery", \.session.robustEvery, 10, min: 1, max: 10_000,
                 "a robust update (detection, matching, estimation) at least every this many frames, tracking between; 1: every frame"),
        .integer("session.minTracks", \.session.minTracks, 30, min: 8, max: 100_000,
                 "fewer correspondences tracked than this (or under session.minTrackedFraction of those seeded) and the frame gets a robust update"),
        .real("session.minTrackedFraction", \.session.minTrackedFraction, 0.5, atLeast: 0, atMost: 1,
              "least fraction of the correspondences a robust update seeded that tracking must keep"),
        .integer("session.maxTracks", \.session.maxTracks, 400, min: 8, max: 100_000,
                 "correspondences a robust update seeds into tracking, at most, the best matches first"),
        .real("session.maxTrackShiftPercent", \.session.maxTrackShiftPercent, 15, above: 0, atMost: 1_000,
              "the view has moved on (the next frame gets a robust update) once the tracked points moved this median percentage of the frame width since the last"),
        .integer("session.tracking.halfWindow", \.session.tracking.halfWindow, 10, min: 2, max: 50,
                 "Lucas-Kanade search window: this many pixels of the analysed image either side of the point (21 x 21 by default)"),
        .integer("session.tracking.levels", \.session.tracking.levels, 3, min: 0, max: 8, "Lucas-Kanade pyramid levels above the image"),
        .real("session.tracking.maxForwardBackward", \.session.tracking.maxForwardBackward, 1, above: 0, atMost: 100,
              "a point is tracked only when tracking it back lands within this many pixels of where it started"),
        .real("session.placementThreshold", \.session.placementThreshold, 2, above: 0, atMost: 100,
              "reprojection threshold placing a frame among the structure and triangulating points into it, pixels"),
        .integer("session.minStructurePoints", \.session.minStructurePoints, 30, min: 6, max: 100_000,
                 "triangulated points a keyframe needs to fix the structure the step is measured in"),
        .real("session.minTriangulationDegrees", \.session.minTriangulationDegrees, 1, atLeast: 0, atMost: 90,
              "least angle between a point's two rays for it to join the structure, degrees"),
        .real("session.maxStepSigma", \.session.maxStepSigma, 20, above: 0, atMost: 180,
              "the step's direction is hinted only when its 1-sigma is under this, degrees"),
        .real("session.convergedStepFraction", \.session.convergedStepFraction, 0.02, atLeast: 0, atMost: 1,
              "converged: the step is under this fraction of the distance to the subject (the structure's median depth) ..."),
        .real("session.convergedDegrees", \.session.convergedDegrees, 1, atLeast: 0, atMost: 180,
              "... and the rotation to the reference under this, degrees"),

        // gates and limits
        .integer("minimumInliers", \.minimumInliers, 10, min: 4, max: 100_000, "fewer matches or homography inliers than this is 'could not estimate'"),
        .integer("maxPixels", \.maxPixels, 50_000_000, min: 1, max: 1 << 40, scale: .fixed, "images with more pixels are refused before decoding; JPEG 2000, whose decoder holds 4 bytes a sample, gets 3/(4 x channels) of it"),
        .flag("strictDecoding", \.strictDecoding, false,
              "refuse images with damaged data the decoder could still decode (otherwise a warning in the result)"),
        .integer("maxBytes", \.maxBytes, 256 << 20, min: 1, max: 1 << 40, scale: .fixed,
                 "image files larger than this many bytes are refused before they are read"),
    ]

    /// Rules that involve several parameters, checked after each one's own range.
    static let crossChecks: [(paths: [String], check: @Sendable (PipelineConfig) -> String?)] = [
        (["features.akaze.descriptorSize", "features.akaze.descriptorChannels", "features.akaze.descriptorType"], { c in
            let maxBits = 162 * c.features.akaze.descriptorChannels
            if c.features.akaze.descriptorSize == 0, c.features.akaze.descriptorChannels != 3,
               [.mldb, .mldbUpright].contains(c.features.akaze.descriptorType) {
                return "features.akaze.descriptorChannels = \(c.features.akaze.descriptorChannels) needs features.akaze.descriptorSize above 0 (OpenCV 4.6's full-size MLDB descriptor has 3 channels)"
            }
            return c.features.akaze.descriptorSize <= maxBits ? nil
                : "features.akaze.descriptorSize = \(c.features.akaze.descriptorSize) is out of range (allowed: 0...\(maxBits) with \(c.features.akaze.descriptorChannels) channels)"
        }),
        (["features.orb.firstLevel", "features.orb.levels"], { c in
            c.features.orb.firstLevel < c.features.orb.levels ? nil
                : "features.orb.firstLevel = \(c.features.orb.firstLevel) is out of range (allowed: 0...\(c.features.orb.levels - 1), below features.orb.levels)"
        }),
        // ORB enlarges the image by scaleFactor^firstLevel before its pyramid: the largest level of the largest image
        // the settings admit must stay within maxPixels, the cap on what any image may cost.
        (["features.detector", "features.orb.firstLevel", "features.orb.scaleFactor", "features.maxDimension", "features.scale", "maxPixels"], { c in
            guard c.features.detector == .orb, c.features.orb.firstLevel > 0 else { return nil }
            let enlargement = pow(c.features.orb.scaleFactor, Double(c.features.orb.firstLevel))
            let largest = c.features.largestAnalysisPixels(maxPixels: c.maxPixels) * enlargement * enlargement
            guard largest > Double(c.maxPixels) else { return nil }
            return "features.orb.firstLevel = \(c.features.orb.firstLevel) with features.orb.scaleFactor = \(formatNumber(c.features.orb.scaleFactor)) enlarges the image \(formatNumber((enlargement * 100).rounded() / 100))x before detection: up to \(formatNumber((largest / 1e6).rounded())) MP at its largest pyramid level, over maxPixels = \(c.maxPixels) (lower either, or features.maxDimension)"
        }),
        (["pose.minIterations", "pose.essential.maxIterations"], { c in
            c.pose.minIterations <= c.pose.essential.maxIterations ? nil
                : "pose.minIterations = \(c.pose.minIterations) must be at most pose.essential.maxIterations = \(c.pose.essential.maxIterations)"
        }),
        (["pose.referenceFocal.minIterations", "pose.referenceFocal.maxIterations"], { c in
            let focal = c.pose.referenceFocal
            return focal.minIterations <= focal.maxIterations ? nil
                : "pose.referenceFocal.minIterations = \(focal.minIterations) must be at most pose.referenceFocal.maxIterations = \(focal.maxIterations)"
        }),
        // Read only where the six-point loop runs.
        (["pose.referenceFocal.minIterations", "pose.referenceFocal.sixPointIterations", "pose.referenceFocal.solver"], { c in
            let focal = c.pose.referenceFocal
            return focal.solver == .scan || focal.minIterations <= focal.sixPointIterations ? nil
                : "pose.referenceFocal.minIterations = \(focal.minIterations) must be at most pose.referenceFocal.sixPointIterations = \(focal.sixPointIterations) (pose.referenceFocal.solver \(focal.solver.rawValue))"
        }),
        // A floor at or over the gate refuses every estimated camera.
        (["pose.referenceFocal.minSigmaPercent", "pose.referenceFocal.maxSigmaPercent"], { c in
            let focal = c.pose.referenceFocal
            return focal.minSigmaPercent < focal.maxSigmaPercent ? nil
                : "pose.referenceFocal.minSigmaPercent = \(formatNumber(focal.minSigmaPercent)) must be below pose.referenceFocal.maxSigmaPercent = \(formatNumber(focal.maxSigmaPercent)): every estimated camera would be refused"
        }),
    ]

    /// The parameters some rule between parameters reads: only their values can make one configuration
    /// invalid and another, alike in the rest and each value in range, valid.
    public static let crossCheckedPaths = Set(crossChecks.flatMap(\.paths))

    /// The parameter at a dotted path.
    public static func parameter(_ path: String) -> Parameter? { byPath[path] }

    /// The parameter at a dotted path, or bad input naming it and the closest known path.
    public static func known(_ path: String, place: String = "") throws -> Parameter {
        guard let parameter = byPath[path] else {
            throw RephotoError.badInput("\(place)unknown parameter '\(path)'\(Suggestion.phrase(for: path, among: parameters.map(\.path))) (rephoto defaults lists them all)")
        }
        return parameter
    }

    /// Settings that existed once, with what replaced them: a configuration naming one is refused with this, not
    /// with "unknown key", and never silently ignored.
    public static let retired: [String: String] = [
        "pose.minParallax": "rotation-only is now decided by GRIC against a pure rotation and by the translation's own uncertainty (pose.maxTranslationSigma), not by a median parallax",
    ]

    private static let byPath = Dictionary(uniqueKeysWithValues: parameters.map { ($0.path, $0) })
    // Key paths are immutable values; the dictionary is never mutated after it is built.
    nonisolated(unsafe) private static let byKeyPath = Dictionary(uniqueKeysWithValues: parameters.map { ($0.keyPath, $0) })

    /// The declared default of the parameter at `keyPath`: what the config structs initialise their fields with.
    static func defaultValue<T>(_ keyPath: KeyPath<PipelineConfig, T>) -> T {
        guard let parameter = byKeyPath[keyPath], let value = parameter.typedDefault as? T else {
            preconditionFailure("\(keyPath) is not declared in ParameterRegistry")
        }
        return value
    }

    /// Checks every parameter's range and the cross-parameter rules; the error names the parameter and value.
    static func validate(_ config: PipelineConfig) throws {
        for parameter in parameters { try parameter.check(parameter.value(in: config)) }
        for rule in crossChecks {
            if let message = rule.check(config) { throw RephotoError.badInput(message) }
        }
    }
}

extension ParameterRegistry {
    /// The parameter table of docs/configuration.md, generated so the docs cannot drift from the code.
    public static func markdownTable() -> String {
        var lines = ["| parameter | type | default | allowed | scale | meaning |", "|---|---|---|---|---|---|"]
        for p in parameters {
            let allowed = "\(p.domain)".replacingOccurrences(of: "|", with: "\\|")
            lines.append("| `\(p.path)` | \(p.typeName) | `\(p.defaultValue)` | \(allowed) | \(p.scale.rawValue) | \(p.summary) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
