import Foundation
import RephotoData
import RephotoKit
import Testing

/// Motion logs in the three formats `rephoto import video` reads, resampled by SLERP against rotations known here.
@Suite struct MotionLogTests {
    static let quarter = Quaternion(axis: SIMD3(0, 0, 1), angle: .pi / 2)

    @Test func theThreeFormatsGiveTheSameAttitudes() throws {
        let q = Self.quarter
        let plain = "timestamp,qw,qx,qy,qz\n0,1,0,0,0\n1,\(q.w),\(q.x),\(q.y),\(q.z)\n"
        let sensorLog = "loggingTime(txt),motionTimestamp_sinceReboot(s),motionQuaternionX(R),motionQuaternionY(R),motionQuaternionZ(R),motionQuaternionW(R)\n"
            + "a,100,0,0,0,1\nb,101,\(q.x),\(q.y),\(q.z),\(q.w)\n"
        let android = "timestamp_ns,x,y,z\n5000000000,0,0,0\n6000000000,\(q.x),\(q.y),\(q.z)\n"
        // Sensor Logger's Orientation.csv: z, y, x, w in that order; its clock is seconds_elapsed.
        let sensorLogger = "time,seconds_elapsed,qz,qy,qx,qw,roll,pitch,yaw\n1700000000000000000,20,0,0,0,1,0,0,0\n"
            + "1700000001000000000,21,\(q.z),\(q.y),\(q.x),\(q.w),0,0,1.57\n"
        for (text, offset, format) in [(plain, 0.0, MotionLog.Format.plain), (sensorLog, -100, .coremotion), (android, -5, .android),
                                       (sensorLogger, -20, .sensorlogger)] {
            let log = try MotionLog.parse(text, path: "log.csv")
            #expect(log.format == format)
            // Half-way: 45° about z, SLERP's exact answer.
            let half = try log.attitude(atVideoTime: 0.5, clockOffset: offset)
            #expect(half.angleDegrees(to: Quaternion(axis: SIMD3(0, 0, 1), angle: .pi / 4)) < 1e-9, "\(format)")
            #expect(try log.attitude(atVideoTime: 1, clockOffset: offset).angleDegrees(to: q) < 1e-9)
        }
        #expect(try MotionLog.parse(android, path: "a").attitudeFrame == .androidRotationVector)
    }

    @Test func badLogsNameTheLineAndTheProblem() throws {
        let cases: [(String, String)] = [
            ("time,a,b\n1,2,3\n", "not a motion log rephoto reads"),
            ("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n0,1,0,0,0\n", "line 3: the clock runs backwards or stands still"),
            ("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n1,2,0,0,0\n", "line 3: attitude"),
            ("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n1,nan,0,0,0\n", "line 3: qw 'nan' is not a finite number"),
            ("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n", "1 samples"),
            // Absurd clocks: bounded, and said in few digits.
            ("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n1e300,1,0,0,0\n", "line 3: timestamp 1e+300 s is beyond 1e+10 s"),
            ("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n7200,1,0,0,0\n", "line 3: 7200 s after the sample before it, more than an hour"),
        ]
        for (text, message) in cases {
            #expect { try MotionLog.parse(text, path: "log.csv") } throws: { ($0 as? RephotoError)?.message.contains(message) == true }
        }
        let log = try MotionLog.parse("timestamp,qw,qx,qy,qz\n0,1,0,0,0\n1,1,0,0,0\n", path: "log.csv")
        #expect { try log.attitude(atVideoTime: 2, clockOffset: 0) } throws: {
            ($0 as? RephotoError)?.message.contains("the motion log covers 0.000-1.000 s of the video's clock (--clock-offset 0), a frame is at 2.000 s") == true
        }
    }
}
