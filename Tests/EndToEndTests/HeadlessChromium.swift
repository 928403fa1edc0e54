import Foundation
import TokendTestSupport

/// A real headless Chromium driven by selenium (in oidc-provider-mock's venv) with Debian's
/// chromedriver, both installed by `scripts/lib/deps.sh`: plays the user at the mock's form.
enum HeadlessChromium {
    /// Opens `url`, signs in at oidc-provider-mock's form as `user`, follows the redirect to the
    /// loopback listener and returns the page it lands on (title, then body text).
    static func signIn(at url: String, as user: String, home: URL) async throws -> String {
        try await run(script, arguments: [user], url: url, home: home)
    }

    /// Opens tokend's hosted sign-in page at `url`, clicks its button (the popup runs the
    /// stand-in handler and Apple on its own) and returns the page's status line once it settles.
    static func clickThroughHostedPage(at url: String, home: URL) async throws -> String {
        try await run(hostedScript, arguments: [], url: url, home: home)
    }

    /// Runs a selenium script (`prelude` first) with the URL on stdin; returns what it printed.
    static func run(_ script: String, arguments: [String], url: String, home: URL) async throws -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") else {
            throw HarnessError("chromium-driver is not installed: run scripts/test (it installs chromium and chromium-driver)")
        }
        let python = URL(fileURLWithPath: OIDCProviderMock.executable).deletingLastPathComponent().appendingPathComponent("python3").path
        let run = try await offPool {
            // The URL on stdin, never in argv: LoginListenerAttackTests' spy reads every command
            // line on the machine, and would take this test's URL for a leak of its own.
            try ChildProcess.run(python, ["-c", prelude + script] + arguments, environment: ["PATH": "/usr/bin:/bin", "HOME": home.path], stdin: url, timeout: 90)
        }
        guard run.status == 0 else { throw HarnessError("selenium exited \(run.status): \(run.stderr)") }
        return run.stdout
    }

    /// A headless Chromium as `driver`.
    static let prelude = """
        import sys
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        options = webdriver.ChromeOptions()
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)

        """

    static let hostedScript = """
        try:
            driver.get(sys.stdin.read().strip())
            WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.ID, "signin"))
            driver.find_element(By.ID, "signin").click()
            WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "status").text.startswith(("Signed in", "Sign-in failed", "tokend did not")))
            print(driver.find_element(By.ID, "status").text)
        finally:
            driver.quit()
        """

    static let script = """
        try:
            driver.get(sys.stdin.read().strip())
            driver.find_element(By.NAME, "sub").send_keys(sys.argv[1])
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            WebDriverWait(driver, 30).until(lambda d: d.current_url.startswith("http://127.0.0.1:") and "/callback" in d.current_url)
            WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.TAG_NAME, "h1"))
            print(driver.title)
            print(driver.find_element(By.TAG_NAME, "body").text)
        finally:
            driver.quit()
        """
}
