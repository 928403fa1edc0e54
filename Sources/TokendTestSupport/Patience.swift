/// How long a test waits for something that should happen. The deadline is reached only by a
/// test that is failing anyway, so it is long: on CI's two loaded cores the first half-minute of
/// a run, when every suite starts its servers at once, stretched a 5 s refresh and a 30 s Python
/// start past their deadlines. Tests that assert a timeout use a manual clock or their own value.
public enum Patience {
    public static let seconds: Double = 120
}
