"""fencekeeper: leases with fencing tokens, kept alive for you, and writes that carry them.

    with fencekeeper.Client("http://127.0.0.1:50051") as client:
        with client.lease("orders", ttl=10) as lease:
            lease.put("total", "17")

fencekeeper.aio has the same for asyncio. The generated API lives beside this package, in fencekeeper.v1
(the fencekeeper-api distribution)."""

# fencekeeper.v1 is installed by another distribution into the same package directory; extend_path also
# finds it when this package and that one sit in different directories (a source checkout on sys.path).
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from fencekeeper._error_mapping import from_rpc_error as error_of  # noqa: E402
from fencekeeper._keepalive import Backoff  # noqa: E402
from fencekeeper._servers import Credentials  # noqa: E402
from fencekeeper.acquire_options import AcquireOptions  # noqa: E402
from fencekeeper.client import Client, Description, Observation, Ownership  # noqa: E402
from fencekeeper.errors import (  # noqa: E402
    CanceledError,
    FencekeeperError,
    GenerationNotIssuedError,
    IdempotencyKeyReusedError,
    InvalidArgumentError,
    LeaseLostError,
    LeaseNotFoundError,
    PreemptedError,
    LeaseNotHeldError,
    LossCause,
    PermissionDeniedError,
    LockDelayError,
    ResourceHeldError,
    StaleTokenError,
    TimeoutError,
    UnauthenticatedError,
    UnavailableError,
)
from fencekeeper.lease import Lease  # noqa: E402
from fencekeeper.election import Leader, LeaderChange, LeaderObservation, Leadership, LossSignal  # noqa: E402
from fencekeeper.store import BatchResult, BatchWrite, Commit, Delete, Entry, FenceModeName, GetResult, Put, Store  # noqa: E402
from fencekeeper.token import Token  # noqa: E402
from fencekeeper.verify import canonical_token, verify_token  # noqa: E402

__all__ = [
    "AcquireOptions",
    "Leader",
    "LeaderChange",
    "LeaderObservation",
    "Leadership",
    "LossSignal",
    "Backoff",
    "BatchResult",
    "BatchWrite",
    "CanceledError",
    "Client",
    "Commit",
    "Credentials",
    "Delete",
    "Description",
    "Entry",
    "FenceModeName",
    "FencekeeperError",
    "GenerationNotIssuedError",
    "GetResult",
    "IdempotencyKeyReusedError",
    "InvalidArgumentError",
    "Lease",
    "LeaseLostError",
    "LeaseNotFoundError",
    "PreemptedError",
    "LeaseNotHeldError",
    "LossCause",
    "Observation",
    "Ownership",
    "PermissionDeniedError",
    "Put",
    "LockDelayError",
    "ResourceHeldError",
    "StaleTokenError",
    "Store",
    "TimeoutError",
    "Token",
    "UnauthenticatedError",
    "UnavailableError",
    "canonical_token",
    "error_of",
    "verify_token",
]
