/// Runs `body` with `resource`, then `tearDown`, whether `body` returns or throws, and only then
/// returns: the scoped replacement for `defer { Task { await resource.shutdown() } }`, whose
/// teardown ran detached, after the test had ended, with nobody waiting for it.
public func withTearDown<Resource, Result>(
    _ resource: Resource, tearDown: (Resource) async -> Void, _ body: (Resource) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(resource)
    } catch {
        await tearDown(resource)
        throw error
    }
    await tearDown(resource)
    return result
}
