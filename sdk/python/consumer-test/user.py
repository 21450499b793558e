"""The ten-line program of a user of the Python library, run by test/sdk/python.test.ts with the venv into
which scripts/setup-polyglot.sh installed the built wheels with pip: acquire, write under the token,
release. Usage: user.py SERVER RESOURCE"""

import sys

import fencekeeper

with fencekeeper.Client(sys.argv[1]) as client:
    with client.lease(sys.argv[2], ttl=2, wait=True) as lease:
        commit = lease.put("greeting", "hello")
    print(f"ok generation {lease.token.generation} fence {commit.fence} from {fencekeeper.__file__}")
