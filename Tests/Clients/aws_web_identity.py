"""boto3 (PyPI), the real client: the AWS SDKs' web identity credentials, AWS_ROLE_ARN and
AWS_WEB_IDENTITY_TOKEN_FILE naming a tokend token file, with STS at a loopback stand-in
(standins.py, reached through AWS_ENDPOINT_URL_STS) that accepts only the account's live token.

Usage: aws_web_identity.py README TOKENCTL ACCOUNT
The environment is README.md's `export` lines, as written ($XDG_RUNTIME_DIR expanded from ours).
Calls GetCallerIdentity, has tokend refresh the account (`tokenctl refresh`), waits for the file
to change and calls again: botocore must read the file anew for its second set of credentials.
Prints one JSON line: whether both calls worked, the error if not, the tokens STS received and
the token file's contents before and after the refresh."""

import json
import os
import re
import subprocess
import sys

from standins import AWSSTS, readme_block, serve, tokenctl_live_token, wait_for_change


def main():
    readme, tokenctl, account = sys.argv[1:4]
    for name, value in re.findall(r"^export (\w+)=(\S+)$", readme_block(readme, "### AWS (web identity token file)", "sh"), re.M):
        os.environ[name] = os.path.expandvars(value)
    AWSSTS.live_token = staticmethod(tokenctl_live_token(tokenctl, account))
    os.environ["AWS_ENDPOINT_URL_STS"] = serve(AWSSTS)
    # Nothing of this machine's own AWS set-up may take part: no files, no instance metadata.
    os.environ.update(AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null", AWS_EC2_METADATA_DISABLED="true")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import boto3

    path = os.environ["AWS_WEB_IDENTITY_TOKEN_FILE"]
    result = {"ok": False, "identities": [], "files": []}
    try:
        sts = boto3.Session().client("sts")
        result["files"].append(open(path, encoding="utf-8").read())
        result["identities"].append(sts.get_caller_identity()["Arn"])
        subprocess.run([tokenctl, "refresh", account], check=True, capture_output=True)
        result["files"].append(wait_for_change(path, result["files"][0]))
        result["identities"].append(sts.get_caller_identity()["Arn"])
        result["ok"] = True
    except Exception as error:  # what boto3 raises is what the test reads
        result["error"] = "%s: %s" % (type(error).__name__, error)
    result["received"] = AWSSTS.received
    print(json.dumps(result))


main()
