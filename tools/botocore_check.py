#!/usr/bin/env python3
"""What botocore, the AWS SDK for Python, makes of a shared config file's retry settings.

    AWS_CONFIG_FILE=FILE python3 tools/botocore_check.py PROFILE...

Prints one JSON object: for each profile, the `retry_mode` and `max_attempts` botocore
resolves from the file (`retry_mode` falls back to botocore's own default mode, null for an
unset `max_attempts`), and the constants botocore's retry handlers apply
(botocore/retries/standard.py, botocore/retries/quota.py, botocore/data/_retry.json), so that
crates/herd-sim/tests/suite/check_botocore.rs can compare `herd check`'s AWS translation with them.

Works on both generations of botocore: before 1.44.0 the 2026 retry behaviour is behind
AWS_NEW_RETRIES_2026 (left unset here, as it is by default: the "classic" generation); from
1.44.0 it is always on ("2026"). The output names the generation it found.
"""
import json
import os
import sys

os.environ.pop("AWS_NEW_RETRIES_2026", None)

import botocore  # noqa: E402
import botocore.loaders  # noqa: E402
import botocore.session  # noqa: E402
from botocore.retries import quota, standard  # noqa: E402


def standard_constants():
    """The standard mode's constants, as the generation in force applies them."""
    checker = standard.RetryQuotaChecker
    backoff = standard.ExponentialBackoff
    new = bool(getattr(standard, "NEW_RETRIES_ENABLED", False))
    scales = getattr(backoff, "_DEFAULT_BACKOFF_CONFIG", None)
    if new:
        # 1.44: `_RETRY_COST` is 14; 1.43 with the flag: `_RETRY_COST_V2`.
        retry_cost = getattr(checker, "_RETRY_COST_V2", checker._RETRY_COST)
        transient_base = scales["non_throttling_base_scale"]
        throttling_base = scales["throttling_base_scale"]
        timeout_cost = None
    else:
        # 1.43 without the flag: `rand(0, 1) * min(2 ** attempt, MAX_BACKOFF)`, 1 s scale.
        retry_cost = checker._RETRY_COST
        transient_base = 1
        throttling_base = 1
        timeout_cost = checker._TIMEOUT_RETRY_REQUEST
    return {
        "max_attempts": standard.DEFAULT_MAX_ATTEMPTS,
        "base": backoff._BASE,
        "transient_base_s": transient_base,
        "throttling_base_s": throttling_base,
        "max_backoff_s": backoff._MAX_BACKOFF,
        "initial_tokens": quota.RetryQuota.INITIAL_CAPACITY,
        "retry_cost": retry_cost,
        "throttling_retry_cost": getattr(checker, "_THROTTLING_RETRY_COST", checker._RETRY_COST),
        "timeout_retry_cost": timeout_cost,
        "success_reward": checker._NO_RETRY_INCREMENT,
        "service_max_attempts": dict(getattr(standard, "_SERVICE_MAX_ATTEMPTS", {})) if new else {},
        "service_backoff": {
            k: v["non_throttling_base_scale"]
            for k, v in getattr(backoff, "_SERVICE_BACKOFF_CONFIG", {}).items()
        }
        if new
        else {},
    }, new


def main(profiles):
    constants, new = standard_constants()
    out = {
        "botocore": botocore.__version__,
        "generation": "2026" if new else "classic",
        "profiles": {},
    }
    for name in profiles:
        session = botocore.session.Session(profile=name)
        out["profiles"][name] = {
            "retry_mode": session.get_config_variable("retry_mode"),
            "max_attempts": session.get_config_variable("max_attempts"),
        }
    out["standard"] = constants
    retry = botocore.loaders.Loader().load_data("_retry")["retry"]
    legacy = retry["__default__"]
    out["legacy"] = {
        "max_attempts": legacy["max_attempts"],
        "delay": dict(legacy["delay"]),
    }
    dynamodb = retry.get("dynamodb", {}).get("__default__", {})
    out["legacy_dynamodb"] = {
        "max_attempts": dynamodb.get("max_attempts"),
        "delay": dict(dynamodb.get("delay", {})),
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
