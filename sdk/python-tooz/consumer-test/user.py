"""The program of a tooz user, run by test/integrations/tooz.test.ts with the venv into which
scripts/setup-polyglot.sh installed the backend's wheel with pip: tooz's own calls, the backend URL the only
fencekeeper-specific line, and the token read off the lock and the election event. Usage: user.py SERVER
(host:port) NAME"""

import sys
import time

import fencekeeper_tooz
from tooz import coordination

coordinator = coordination.get_coordinator(f"fencekeeper://{sys.argv[1]}?ttl=2", b"host-1")
coordinator.start(start_heart=True)

lock = coordinator.get_lock(sys.argv[2].encode())
with lock:
    commit = lock.lease.put("greeting", "hello")
    print(f"lock generation {lock.token.generation} fence {commit.fence}")

elected = []
coordinator.watch_elected_as_leader(sys.argv[2].encode(), elected.append)
give_up = time.monotonic() + 15  # the test waits for this process: never for ever
while not elected:
    if time.monotonic() > give_up:
        sys.exit("not elected within 15 s")
    coordinator.run_watchers()
    time.sleep(0.1)
print(f"leader {coordinator.get_leader(sys.argv[2].encode()).get().decode()} generation {elected[0].token.generation}")

coordinator.stop()
print(f"ok from {fencekeeper_tooz.__file__}")
