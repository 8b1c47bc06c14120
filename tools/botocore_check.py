#!/usr/bin/env python3
"""What botocore, the AWS SDK for Python, makes of a shared config file's retry settings.

    AWS_CONFIG_FILE=FILE python3 tools/botocore_check.py PROFILE...

Prints one JSON object: for each profile, the `retry_mode` and `max_attempts` botocore
resolves from the file (null when unset), and the constants botocore's retry handlers apply
(botocore/retries/standard.py, botocore/retries/quota.py, botocore/data/_retry.json), so that
crates/herd-sim/tests/suite/check_botocore.rs can compare `herd check`'s AWS translation with them.
The 2026 retry behaviour behind AWS_NEW_RETRIES_2026 is off, as it is by default.
"""
import json
import os
import sys

os.environ.pop("AWS_NEW_RETRIES_2026", None)

import botocore  # noqa: E402
import botocore.loaders  # noqa: E402
import botocore.session  # noqa: E402
from botocore.retries import quota, standard  # noqa: E402


def main(profiles):
    out = {"botocore": botocore.__version__, "profiles": {}}
    for name in profiles:
        session = botocore.session.Session(profile=name)
        out["profiles"][name] = {
            "retry_mode": session.get_config_variable("retry_mode"),
            "max_attempts": session.get_config_variable("max_attempts"),
        }
    checker = standard.RetryQuotaChecker
    legacy = botocore.loaders.Loader().load_data("_retry")["retry"]["__default__"]
    out["standard"] = {
        "new_retries": standard.NEW_RETRIES_ENABLED,
        "max_attempts": standard.DEFAULT_MAX_ATTEMPTS,
        "base": standard.ExponentialBackoff._BASE,
        "max_backoff_s": standard.ExponentialBackoff._MAX_BACKOFF,
        "initial_tokens": quota.RetryQuota.INITIAL_CAPACITY,
        "retry_cost": checker._RETRY_COST,
        "timeout_retry_cost": checker._TIMEOUT_RETRY_REQUEST,
        "success_reward": checker._NO_RETRY_INCREMENT,
    }
    out["legacy"] = {
        "max_attempts": legacy["max_attempts"],
        "delay": dict(legacy["delay"]),
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
