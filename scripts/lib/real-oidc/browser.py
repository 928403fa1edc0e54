#!/usr/bin/env python3
"""The user at a real browser: headless Chromium (Debian's, through selenium and Debian's
chromedriver) opens what tokenctl handed to xdg-open, signs in at Django's login form as alice,
approves DOT's consent form, and lands on tokend's loopback redirect page.

  browser.py PAGE_OR_URL     (run by the xdg-open stub; tokenctl gives a 0600 HTML file's path)

Writes $REAL_OIDC_WORLD/browser.result: "ok" or "error", then the landing page's title and text.
The password comes from $REAL_OIDC_STATE/user-password.
"""
import os
import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ISSUER = os.environ["REAL_OIDC_ISSUER"]
ORIGIN = ISSUER.rsplit("/o", 1)[0]
STATE = Path(os.environ["REAL_OIDC_STATE"])
RESULT = Path(os.environ["REAL_OIDC_WORLD"]) / "browser.result"


def report(verdict, driver, note=""):
    try:
        text = "%s\n%s\n%s" % (driver.current_url.split("?")[0], driver.title, driver.find_element(By.TAG_NAME, "body").text)
    except WebDriverException as error:
        text = "(no page: %s)" % error.msg
    partial = RESULT.with_suffix(".partial")
    partial.write_text("%s\n%s%s\n" % (verdict, note + "\n" if note else "", text))
    partial.rename(RESULT)
    print(verdict, note, text.replace("\n", " | ")[:600], flush=True)


def on_server(driver):
    return driver.current_url.startswith(ORIGIN + "/")


def main(target):
    url = target if "://" in target else Path(target).resolve().as_uri()
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-first-run"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    try:
        driver.set_page_load_timeout(30)
        driver.get(url)
        # tokenctl's page meta-refreshes to the authorization URL, which sends us to the login form.
        WebDriverWait(driver, 20).until(lambda d: on_server(d) and d.find_elements(By.TAG_NAME, "body"))
        if "/accounts/login/" in driver.current_url:
            driver.find_element(By.NAME, "username").send_keys("alice")
            driver.find_element(By.NAME, "password").send_keys((STATE / "user-password").read_text())
            driver.find_element(By.ID, "sign-in").click()
            WebDriverWait(driver, 20).until(lambda d: "/accounts/login/" not in d.current_url)
        # DOT's consent page (REQUEST_APPROVAL_PROMPT = "force"): allow.
        deadline = time.monotonic() + 20
        while on_server(driver) and time.monotonic() < deadline:
            allow = driver.find_elements(By.NAME, "allow")
            if allow:
                allow[0].click()
                WebDriverWait(driver, 20).until(lambda d: not d.find_elements(By.NAME, "allow") or not on_server(d))
                break
            if driver.find_elements(By.TAG_NAME, "h2") and "Error" in driver.find_element(By.TAG_NAME, "h2").text:
                return report("error", driver, "the authorization server showed an error page")
            time.sleep(0.1)
        # The redirect to tokend's loopback listener, and its page.
        try:
            WebDriverWait(driver, 20).until(
                lambda d: d.current_url.startswith("http://127.0.0.1:") and not on_server(d) and d.find_elements(By.TAG_NAME, "body"))
        except WebDriverException:
            return report("error", driver, "never left the authorization server")
        report("ok", driver)
    except Exception as error:  # noqa: BLE001 - any failure is a result the suite must see
        report("error", driver, "%s: %s" % (type(error).__name__, error))
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
