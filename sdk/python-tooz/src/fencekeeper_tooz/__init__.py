"""A tooz coordination backend on fencekeeper (`fencekeeper://HOST:PORT`): locks and leader election whose
holders get a fencing token. The `tooz.backends` entry point `fencekeeper` names FencekeeperDriver."""

from fencekeeper_tooz.driver import FencekeeperDriver, FencekeeperLock, LeaderElected, LeadershipLost

__all__ = ["FencekeeperDriver", "FencekeeperLock", "LeaderElected", "LeadershipLost"]
